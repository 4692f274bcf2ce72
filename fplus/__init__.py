"""Factory+-style GitOps edge-cluster manager: the one distribution namespace of its services."""
