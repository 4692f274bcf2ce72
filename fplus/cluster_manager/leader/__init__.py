"""Leader election for Cluster Manager replicas: a Kubernetes Lease in a cluster, a lease row
in the Cluster Manager's database otherwise (:mod:`.choose`), kept by :mod:`.elector`."""

from __future__ import annotations

from .choose import MODES, in_turn, make_elector, make_lease, resolve_mode
from .database_lease import SCHEMA, DatabaseLease
from .elector import AlwaysLeader, LeaderElector, LeaderStatus
from .lease import Lease, new_identity

__all__ = ["MODES", "SCHEMA", "AlwaysLeader", "DatabaseLease", "LeaderElector",
           "LeaderStatus", "Lease", "in_turn", "make_elector", "make_lease", "new_identity",
           "resolve_mode"]
