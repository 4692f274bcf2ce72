"""Many HTTP exchanges over one connection: HTTP/2 (``h2``) framing on any byte transport.

The Cluster Manager and Edge Sync speak it over the WebSocket Edge Sync dials out; the
Cluster Manager's replicas speak it to each other over TCP to reach the replica an edge is
connected to. Each request is a stream with its own flow control, so a slow reader holds
back only its own stream. Nothing here knows Kubernetes beyond :mod:`fplus.tunnel.wire`,
which says how a Kubernetes API request travels as stream headers.
"""
