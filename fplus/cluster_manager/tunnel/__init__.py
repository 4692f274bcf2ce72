"""Edge tunnels at the centre: the WebSocket each Edge Sync keeps open, where each one is,
and the bounds on what crosses it.

An edge is connected to one replica. :mod:`.table` records which (its relay address) in the
Cluster Manager's database, so a request reaching any replica is sent on to that one over
:mod:`.relay`; :mod:`.service` ties them together for the routes.
"""
