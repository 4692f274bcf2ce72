"""A cluster's timeline on its page: the audit log's rows (changes asked through the API and
the console, the phases the reconciler recorded, re-seals) and the commits of its repo,
newest first. Names and commit messages only, never a file's content."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

from fplus.git.repo import CommitInfo
from fplus.git.store import RepoStore

from ...audit import AuditLog

log = logging.getLogger(__name__)
LIMIT = 30
"""Items a timeline shows (each source is read up to this many)."""


@dataclass(frozen=True)
class Item:
    """One line of the timeline."""

    time: str
    """ISO 8601, UTC, milliseconds (sorts as text)."""
    kind: str
    """``change`` (an audit row), ``phase`` (a phase reached) or ``commit``."""
    who: str
    what: str
    detail: str
    outcome: str
    sha: str | None = None


def iso(seconds: float) -> str:
    """``seconds`` since the epoch as the audit log writes times."""
    return (time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))
            + f".{int(seconds % 1 * 1000):03d}Z")


def _change(row: dict[str, Any]) -> Item:
    who = row["principal"]["name"] or row["principal"]["uuid"] or "-"
    target = row["target"]
    if row["action"] == "phase.changed":
        return Item(row["time"], "phase", who, "phase.changed", f"→ {row['reason'] or '?'}",
                    "ok")
    outcome = "ok" if row["outcome"] == "ok" else (
        f"refused {row['status']}" + (f" ({row['reason']})" if row["reason"] else ""))
    return Item(row["time"], "change", who, row["action"],
                f"{target['kind']} {target['name'] or target['uuid'] or ''}".rstrip(), outcome)


def _commit(commit: CommitInfo) -> Item:
    return Item(iso(commit.time), "commit", commit.author, "commit", commit.summary, "ok",
                commit.sha)


def timeline(cluster: str, audit: AuditLog, repos: RepoStore | None,
             limit: int = LIMIT) -> tuple[list[Item], bool]:
    """The newest ``limit`` items of ``cluster``'s timeline; and whether its commits could be
    read (False: the repo was unreachable, the timeline holds the audit rows only)."""
    items = [_change(row) for row in audit.page(cluster=cluster, limit=limit)[0]]
    readable = True
    if repos is not None:
        try:
            items += [_commit(c) for c in repos.history(cluster, limit)]
        except Exception as exc:  # the Git server unreachable: the rows still show
            log.warning("cluster %s: the timeline's commits are unreadable: %s", cluster, exc)
            readable = False
    items.sort(key=lambda item: item.time, reverse=True)
    return items[:limit], readable


__all__ = ["LIMIT", "Item", "iso", "timeline"]
