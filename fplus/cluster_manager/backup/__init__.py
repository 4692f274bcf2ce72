"""Backup and restore of a stack (``cluster-manager backup`` and ``restore``).

- :mod:`.manifest`: the backup's layout, its manifest (what was taken, versions, time,
  checksums) and README, and the one-line refusal every part raises;
- :mod:`.store`: the Config Store export (ConfigDB and Auth dumps), the emptiness check of a
  target and the loading, with the target's own service principals kept;
- :mod:`.repos`: every bare repo as a ``git bundle``, and back;
- :mod:`.tables`: the Cluster Manager's tables that a restore needs (sealing key pins and
  escrow records; never bootstrap tokens, never the escrow key).
"""

from .directory import BackupError

__all__ = ["BackupError"]
