"""The bare repositories on disk: the one format the Git server serves and the Cluster Manager
writes into when both run on one machine (``--git-repos``). Imports nothing of ours.

- :mod:`.layout`: where a repo lives (``<repos>/<uuid>.git``, ``repos`` in the Git server's
  data dir) and which repos a directory holds;
- :mod:`.create`: creating a repo (HEAD → ``main``), idempotent and safe against concurrent
  creators in any process;
- :mod:`.refs`: reading a branch and moving it by compare-and-swap under git's own lock file,
  so neither side (nor ``git receive-pack``) clobbers the other;
- :mod:`.turns`: writers in several processes taking turns to commit to one repo, so they
  seldom race for that swap at all.
- :mod:`.durable`: making every recent write to a file system durable in one call.
"""

from __future__ import annotations

from .create import create, exists
from .durable import sync_file_system
from .layout import DEFAULT_BRANCH, is_repo_uuid, repo_path, repos_dir, stored
from .refs import (
    RefLockTimeout,
    RefUpdate,
    break_if_stale,
    compare_and_swap,
    lock_ref,
    read_ref,
)

__all__ = ["DEFAULT_BRANCH", "RefLockTimeout", "RefUpdate", "break_if_stale", "compare_and_swap",
           "create", "exists", "is_repo_uuid", "lock_ref", "read_ref", "repo_path", "repos_dir",
           "stored", "sync_file_system"]
