"""What both wings (services and reconcile) share: the apps and edge roles, the settings, what
a cluster configuration entry may hold, the setup status entry, and cluster name claims."""
