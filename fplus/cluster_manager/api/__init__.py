"""The API wing: what the HTTP routes call. Bootstrap scripts and their one-time tokens,
sealed secrets, and the status view. Reads the setup status the reconcile wing writes
(:mod:`fplus.cluster_manager.setup_status`); never imports the reconcile wing."""
