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
"""

from __future__ import annotations

from .create import create, exists
from .layout import DEFAULT_BRANCH, is_repo_uuid, repo_path, repos_dir, stored
from .refs import RefLockTimeout, break_if_stale, compare_and_swap, read_ref

__all__ = ["DEFAULT_BRANCH", "RefLockTimeout", "break_if_stale", "compare_and_swap", "create",
           "exists", "is_repo_uuid", "read_ref", "repo_path", "repos_dir", "stored"]
