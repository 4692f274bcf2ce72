"""File formats read and written: Helm chart archives (:mod:`.helm_chart`), ``flux install
--export`` output (:mod:`.flux_export`), multi-document manifest YAML (:mod:`.manifest_yaml`)."""
