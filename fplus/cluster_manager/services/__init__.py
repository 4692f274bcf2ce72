"""The API wing: what the HTTP routes call, one sub-package per capability: ``clusters``
(create, edit, status), ``fleet`` (the cluster list and the counts for ``/metrics``),
``deployments`` (per-cluster deployments, system charts), ``charts`` (chart templates and
imports into the central repos), ``secrets`` (sealing, key pins, re-sealing) and
``bootstrap`` (scripts and their one-time tokens). Reads the setup status the reconcile wing
writes (:mod:`fplus.cluster_manager.model.setup_status`); never imports the reconcile wing."""
