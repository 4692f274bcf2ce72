"""Edge Sync: the agent on each edge cluster.

It reports the cluster's nodes (``hosts``), the Sealed Secrets certificate
(``kubeseal_cert``) and a heartbeat (``lastSeen``, ``version``) into the cluster's own
*Edge cluster status* entry, and turns the cluster's *Edge deployment* entries into Flux
HelmReleases (plus GitRepositories for chart sources), applied with server-side apply and
pruned by label. It reaches the Config Store only through :mod:`fplus.config_store.client`.
"""

from __future__ import annotations

from importlib import metadata

try:
    __version__ = metadata.version("fplus-edge-manager")
except metadata.PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0"
