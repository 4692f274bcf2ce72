"""What a failed Git operation raises, for callers that never import pygit2 themselves."""

from __future__ import annotations

import pygit2

GitError = pygit2.GitError
"""libgit2's error: a fetch, push or read that failed (pygit2's own class)."""
