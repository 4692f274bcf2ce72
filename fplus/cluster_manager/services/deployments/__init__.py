"""The Edge deployments of one cluster, and the system charts no deployment may name."""
