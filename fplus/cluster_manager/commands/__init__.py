"""The ``cluster-manager`` sub-commands that :mod:`fplus.cluster_manager.cli` dispatches to:
``up`` (the all-in-one stack), ``escrow init|rotate`` (:mod:`.escrow_keys`), ``import-chart``
and ``import-flux`` (:mod:`.imports`), and what each ``serve`` worker builds
(:mod:`.serve_worker`)."""
