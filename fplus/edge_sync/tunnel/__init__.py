"""The edge end of the tunnel: Edge Sync dials the Cluster Manager, which reaches this
cluster's Kubernetes API through it.

:func:`edge_tunnel` makes the :class:`Tunnel` the agent runs (``tunnel.run(stop)`` in a
thread of its own, ``tunnel.close()`` when stopping): a WebSocket to
``<CLUSTER_MANAGER_URL>/v1/cluster/<uuid>/tunnel`` (:mod:`.connection`) kept open and
reconnected (:mod:`.session`), carrying HTTP/2 streams, each forwarded to the local
kube-apiserver as Edge Sync, impersonating the level the Cluster Manager granted
(:mod:`.forward`, :mod:`.upgrade`, :mod:`.apiserver`).
"""

from __future__ import annotations

from kubernetes import client

from .apiserver import ApiServer
from .connection import tunnel_url
from .forward import Forwarder
from .session import Tokens, Tunnel, Workers, edge_mux

__all__ = ["ApiServer", "Forwarder", "Tokens", "Tunnel", "Workers", "edge_mux", "edge_tunnel",
           "tunnel_url"]


def edge_tunnel(manager_url: str, cluster_uuid: str, tokens: Tokens,
                kube_configuration: client.Configuration) -> Tunnel:
    """The tunnel of cluster ``cluster_uuid`` to the Cluster Manager at ``manager_url``,
    authenticated with ``tokens`` (Edge Sync's Config Store client), forwarding to the API
    server ``kube_configuration`` (Edge Sync's Kubernetes client's) names."""
    forward = Forwarder(ApiServer.from_configuration(kube_configuration))
    return Tunnel(tunnel_url(manager_url, cluster_uuid), tokens, forward,
                  on_close=forward.close)
