"""What ``git-server seed`` does (the Config Store set-up and the Git server's own principal),
for callers that seed in their own process; the command itself is :mod:`.cli`."""

from ._domain.setup import seed

__all__ = ["seed"]
