"""The cluster list (``GET /v1/cluster``, the console's list, ``fplus cluster list``): the
clusters a caller may see, searched, filtered, sorted and paged, with counts per phase.

The rows come from :class:`~.rows.FleetRows` (three searches, not a read per cluster);
filtering, sorting and counting happen here in memory. A row's sync needs its repo's head:
it is derived for the rows of the page only, and for every candidate only when the list is
filtered by sync state (one head per commissioned cluster, cached by
:class:`~.repo_heads.RepoHeads`).

Paging is by cursor: ``next`` names where the page ended (in uuid order, the last uuid, as
before; in name order an opaque token holding the last name and uuid), so a page never
repeats or skips a cluster that stays while others come and go.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from fplus.config_store import uuids
from fplus.jsontypes import Doc, strings
from fplus.kubenames.labels import selector_matches

from ...model.sync_state import STATES
from ..clusters.status_view import Liveness
from ..errors import BadRequest
from .rows import FleetRow, FleetRows

PHASES = ("Pending", "Failed", "Provisioning", "Ready", "Online", "Stale", "Offline",
          "Deleting")
"""The phases a cluster may be in (:mod:`..clusters.status_view`), in the order counts are given."""
SYNC_STATES = STATES
SORTS = ("uuid", "name")
MAX_LIMIT = 1000
MAX_SEARCH = 200
_NAME_CURSOR = "n."


@dataclass(frozen=True)
class FleetQuery:
    """What the caller asked for; :meth:`parse` checks the query parameters."""

    phase: str | None = None
    sync: str | None = None
    search: str | None = None
    selector: Doc | None = None
    sort: str = "uuid"
    after: str | None = None
    limit: int = 100

    @classmethod
    def parse(cls, args: dict[str, str], selector: Doc | None = None
              ) -> FleetQuery:
        """The query of ``args`` (a 400 naming the first bad parameter)."""
        phase, sync = args.get("phase"), args.get("sync")
        if phase is not None and phase not in PHASES:
            raise BadRequest(f"phase must be one of {', '.join(PHASES)}")
        if sync is not None and sync not in SYNC_STATES:
            raise BadRequest(f"sync must be one of {', '.join(SYNC_STATES)}")
        sort = args.get("sort", "uuid")
        if sort not in SORTS:
            raise BadRequest(f"sort must be one of {', '.join(SORTS)}")
        limit = args.get("limit", "100")
        if not limit.isdigit() or not 1 <= int(limit) <= MAX_LIMIT:
            raise BadRequest(f"limit must be a whole number from 1 to {MAX_LIMIT}")
        search = args.get("search")
        if search is not None and (len(search) > MAX_SEARCH or not search.isprintable()):
            raise BadRequest(f"search must be printable text of at most {MAX_SEARCH} "
                             "characters (part of a name, or the start of a uuid)")
        after = args.get("after")
        if after is not None:
            _cursor_key(after, sort)  # 400 now, before anything is read
        return cls(phase, sync, search.strip().lower() if search else None, selector, sort,
                   after, int(limit))


@dataclass(frozen=True)
class FleetPage:
    """One page: its rows, the cursor of the next one (None: the last), the matching clusters'
    count by phase (every filter but ``phase`` applied; every phase present) and how many match
    every filter."""

    clusters: list[dict[str, object]]
    next: str | None
    counts: dict[str, int]
    total: int


def _sort_key(row: FleetRow, sort: str) -> tuple[str, ...]:
    return (row.uuid,) if sort == "uuid" else (row.name or "", row.uuid)


def _cursor(row: FleetRow, sort: str) -> str:
    if sort == "uuid":
        return row.uuid
    packed = json.dumps([row.name or "", row.uuid], separators=(",", ":")).encode()
    return _NAME_CURSOR + base64.urlsafe_b64encode(packed).decode().rstrip("=")


def _cursor_key(cursor: str, sort: str) -> tuple[str, ...]:
    """The sort key a cursor names (400 for one this sort did not give)."""
    if sort == "uuid":
        if not uuids.is_uuid(cursor):
            raise BadRequest("after must be a cluster UUID (the `next` of the previous page)")
        return (cursor,)
    key: object = None
    if cursor.startswith(_NAME_CURSOR):
        body = cursor[len(_NAME_CURSOR):]
        try:
            key = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
        except (binascii.Error, ValueError):
            key = None
    found = strings(key)
    if not (isinstance(key, list) and len(key) == len(found) == 2
            and uuids.is_uuid(found[1])):
        raise BadRequest("after must be the `next` of the previous page of this sort "
                         "(sort=name gives its own cursors)")
    return (found[0], found[1])


def _found(row: FleetRow, text: str) -> bool:
    """Whether ``text`` (lower case) is part of the row's name or the start of its uuid."""
    return row.uuid.startswith(text) or text in (row.name or "").lower()


class FleetView:
    """``page(visible, query)``: one page of the list."""

    def __init__(self, rows: FleetRows, head: Callable[[str], str | None],
                 liveness: Liveness | None = None) -> None:
        self.rows, self.head, self.liveness = rows, head, liveness or Liveness()

    def page(self, visible: Callable[[str], bool], query: FleetQuery) -> FleetPage:
        """The page ``query`` asks for, of the clusters ``visible(uuid)`` accepts."""
        now = datetime.now(UTC)
        synced: dict[str, str] = {}

        def sync_state(row: FleetRow) -> str:
            if row.uuid not in synced:
                head = self.head(row.uuid) if row.setup.ready else None
                synced[row.uuid] = row.sync(head, now, self.liveness).state
            return synced[row.uuid]

        candidates = [
            row for row in self.rows.rows()
            if (query.search is None or _found(row, query.search))
            and (query.selector is None or selector_matches(query.selector, row.labels))
            and visible(row.uuid)]
        if query.sync is not None:
            candidates = [row for row in candidates if sync_state(row) == query.sync]
        counts = dict.fromkeys(PHASES, 0)
        for row in candidates:
            counts[row.phase] = counts.get(row.phase, 0) + 1
        matching = [row for row in candidates if query.phase in (None, row.phase)]
        matching.sort(key=lambda row: _sort_key(row, query.sort))
        total = len(matching)
        if query.after is not None:
            start = _cursor_key(query.after, query.sort)
            matching = [row for row in matching if _sort_key(row, query.sort) > start]
        shown = matching[:query.limit]
        more = len(matching) > query.limit
        return FleetPage([row.view(sync_state(row)) for row in shown],
                         _cursor(shown[-1], query.sort) if more else None, counts, total)
