"""Where each cluster's tunnel is: rows a live replica keeps heard, and rows left behind."""

from __future__ import annotations

import time
from pathlib import Path

from fplus.cluster_manager.db import open_database
from fplus.cluster_manager.tunnel import table
from fplus.cluster_manager.tunnel.table import TunnelTable

CLUSTER = "0c6e8d1a-1b2c-4d3e-8f40-5a6b7c8d9e0f"


def _table(tmp_path: Path) -> TunnelTable:
    db = open_database(f"sqlite:///{tmp_path / 'cm.sqlite'}")
    db.prepare(table.SCHEMA)
    return TunnelTable(db)


def test_a_connection_is_where_its_replica_said_until_it_ends(tmp_path: Path) -> None:
    rows = _table(tmp_path)
    assert rows.find(CLUSTER) is None
    rows.connected(CLUSTER, "conn-1", "10.0.0.1:7000")
    found = rows.find(CLUSTER)
    assert found is not None and found.connected and found.relay == "10.0.0.1:7000"
    rows.down(CLUSTER, "conn-0")  # an older connection ending leaves the newer one
    assert rows.find(CLUSTER).connected  # type: ignore[union-attr]
    rows.down(CLUSTER, "conn-1")
    gone = rows.find(CLUSTER)
    assert gone is not None and not gone.connected and gone.relay is None


def test_the_rows_of_a_replica_that_stopped_marking_them_read_as_away(
        tmp_path: Path) -> None:
    rows = _table(tmp_path)
    rows.connected(CLUSTER, "conn-1", "10.0.0.1:7000")
    old = time.time() - table.STALE_AFTER - 1
    rows.db.execute("UPDATE cm_tunnels SET heard=?", (old,))
    stale = rows.find(CLUSTER)
    assert stale is not None and not stale.connected and stale.away_since == old
    rows.beat("10.0.0.2:7000")  # another replica's beat is not this row's
    assert not rows.find(CLUSTER).connected  # type: ignore[union-attr]
    rows.beat("10.0.0.1:7000")
    assert rows.find(CLUSTER).connected  # type: ignore[union-attr]
