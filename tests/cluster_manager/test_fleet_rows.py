"""The list's rows (``services.fleet_rows``) against a counting stand-in for the Config
Store's search and a fake clock: read per request in a small fleet; shared in a large one for
``ttl`` or three times the read, whichever is longer; dropped by a write, and never kept when
a write came during the read. Milliseconds, no process."""

from __future__ import annotations

from typing import Any

from fplus.cluster_manager.model.apps_and_roles import CONFIG_APP, EDGE_APP, STATUS_APP
from fplus.cluster_manager.services.fleet.rows import FleetRows


class Store:
    """``search`` as the client answers it, counting calls; ``read_takes`` seconds pass on
    the clock during each one, and ``during`` runs in the middle of the first."""

    def __init__(self, clusters: int, clock: list[float]) -> None:
        self.clusters, self.clock, self.searches = clusters, clock, 0
        self.read_takes = 0.0
        self.during: Any = None

    def search(self, app: str, query: dict[str, Any], select: dict[str, str]) -> Any:
        self.searches += 1
        self.clock[0] += self.read_takes / 3
        if self.during is not None and app == STATUS_APP:
            self.during, during = None, self.during
            during()
        uuids = [f"00000000-0000-4000-8000-{i:012d}" for i in range(self.clusters)]
        if app == CONFIG_APP:
            return {u: {"name": f"c{i}"} for i, u in enumerate(uuids)}
        if app == STATUS_APP:
            return {u: {"phase": "Ready", "ready": True, "name": f"c{i}"}
                    for i, u in enumerate(uuids)}
        assert app == EDGE_APP
        return {}


def rows(clusters: int, **kwargs: Any) -> tuple[FleetRows, Store, list[float]]:
    clock = [0.0]
    store = Store(clusters, clock)
    return FleetRows(store, clock=lambda: clock[0], **kwargs), store, clock  # type: ignore[arg-type]


def test_a_small_fleet_is_read_for_every_request() -> None:
    fleet, store, _ = rows(3, cache_from=4)
    assert [r.name for r in sorted(fleet.rows(), key=lambda r: r.uuid)] == ["c0", "c1", "c2"]
    fleet.rows()
    assert store.searches == 6


def test_a_large_fleet_shares_its_rows_until_they_age_or_a_write_drops_them() -> None:
    fleet, store, clock = rows(4, cache_from=4, ttl=2.0)
    first = fleet.rows()
    assert fleet.rows() is first and store.searches == 3
    clock[0] += 2.5
    assert fleet.rows() is not first and store.searches == 6
    fleet.forget()
    fleet.rows()
    assert store.searches == 9


def test_a_slow_read_is_shared_three_times_as_long() -> None:
    fleet, store, clock = rows(4, cache_from=1, ttl=2.0)
    store.read_takes = 3.0
    first = fleet.rows()
    clock[0] += 8.5  # within 9 s (three times the read)
    assert fleet.rows() is first
    clock[0] += 1.0
    assert fleet.rows() is not first


def test_rows_read_across_a_write_are_not_kept() -> None:
    fleet, store, _ = rows(4, cache_from=1, ttl=60.0)
    store.during = fleet.forget
    fleet.rows()
    fleet.rows()
    assert store.searches == 6
