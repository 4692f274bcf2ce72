"""The audit table on real SQLite and real PostgreSQL: made idempotently, rows numbered in
the order written, paged newest first with filters, and rows past the retention dropped."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from fplus.cluster_manager.audit import AuditLog, Entry, schema
from fplus.cluster_manager.db import Database, open_database


@pytest.fixture(params=["sqlite", "postgresql"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Database]:
    url = (f"sqlite:///{tmp_path / 'cm.sqlite'}" if request.param == "sqlite"
           else request.getfixturevalue("postgres_url"))
    found = open_database(url)
    found.prepare(schema(found.dialect))
    found.prepare(schema(found.dialect))  # a second start changes nothing
    yield found
    found.close()


def entry(n: int, cluster: str | None = "c1", status: int = 200) -> Entry:
    return Entry(request_id=f"r{n}", principal=f"p{n % 2}", principal_name=f"user{n % 2}",
                 action="cluster.patch", target_kind="cluster", target=cluster,
                 target_name="edge", cluster=cluster, status=status)


def test_rows_page_newest_first_with_filters(db: Database) -> None:
    log = AuditLog(db)
    for n in range(7):
        log.record(entry(n, "c1" if n < 5 else "c2", 403 if n == 3 else 200))
    rows, more = log.page(limit=3)
    assert [r["requestId"] for r in rows] == ["r6", "r5", "r4"] and more is not None
    rest, end = log.page(limit=10, before=more)
    assert [r["requestId"] for r in rest] == ["r3", "r2", "r1", "r0"] and end is None
    assert rest[0]["outcome"] == "refused" and rest[0]["status"] == 403
    assert rest[1]["outcome"] == "ok"
    assert [r["requestId"] for r in log.page(cluster="c2")[0]] == ["r6", "r5"]
    assert [r["requestId"] for r in log.page(principal="user1", cluster="c1")[0]] == [
        "r3", "r1"]
    assert log.page(principal="p1")[0] == log.page(principal="user1")[0]
    assert log.page(since=4102444800.0)[0] == []  # 2100
    assert rows[0]["time"].endswith("Z") and rows[0]["time"][:2] == "20"


def test_rows_past_the_retention_are_dropped(db: Database) -> None:
    kept = AuditLog(db, retention_days=0)  # forever
    kept.record(entry(1))
    db.execute("UPDATE cm_audit SET at = at - 3 * 86400.0")
    kept.record(entry(2))
    assert kept.prune() == 0 and len(kept.page()[0]) == 2
    week = AuditLog(db, retention_days=2)
    assert week.prune() == 1
    assert [r["requestId"] for r in week.page()[0]] == ["r2"]
