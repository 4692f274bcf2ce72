"""The fleet at a glance: the cluster list and the per-phase and per-sync counts."""
