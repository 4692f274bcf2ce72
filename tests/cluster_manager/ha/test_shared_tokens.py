"""Bootstrap tokens in one database seen by several replicas (separate handles, as separate
processes have), on real SQLite and real PostgreSQL: issued by one, honoured by another,
redeemed exactly once however many try at the same moment."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time

import pytest

from fplus.cluster_manager.services.bootstrap.tokens import BootstrapTokens
from fplus.cluster_manager.services.errors import Gone, Unauthorized
from tests.cluster_manager.ha.conftest import OpenDatabase

CLUSTER = "11111111-1111-4111-8111-111111111111"


def test_issued_by_one_redeemed_once_by_another(open_db: OpenDatabase) -> None:
    a, b = BootstrapTokens(open_db()), BootstrapTokens(open_db())
    token = a.issue(CLUSTER)
    b.check(CLUSTER, token)
    b.redeem(CLUSTER, token)
    with pytest.raises(Gone, match="used already"):
        a.redeem(CLUSTER, token)
    newer = b.issue(CLUSTER)
    with pytest.raises(Unauthorized):
        a.check(CLUSTER, token)  # superseded
    a.check(CLUSTER, newer)


def test_of_many_redeeming_at_once_exactly_one_wins(open_db: OpenDatabase) -> None:
    replicas = [BootstrapTokens(open_db()) for _ in range(8)]
    token = replicas[0].issue(CLUSTER)
    barrier = threading.Barrier(len(replicas))
    outcomes: list[str] = []

    def redeem(tokens: BootstrapTokens) -> None:
        barrier.wait()
        try:
            tokens.redeem(CLUSTER, token)
            outcomes.append("won")
        except Gone:
            outcomes.append("gone")

    threads = [threading.Thread(target=redeem, args=(t,)) for t in replicas]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["gone"] * (len(replicas) - 1) + ["won"]


def test_expiry_is_by_the_databases_clock(open_db: OpenDatabase) -> None:
    a, b = BootstrapTokens(open_db(), ttl=0.0), BootstrapTokens(open_db())
    token = a.issue(CLUSTER)  # expires as it is written
    with pytest.raises(Gone, match="expired"):
        b.redeem(CLUSTER, token)


PREPARE = textwrap.dedent("""
    import sys, time
    from fplus.cluster_manager.services.bootstrap.tokens import SCHEMA
    from fplus.cluster_manager.db import open_database
    from fplus.cluster_manager.leader import SCHEMA as LEASE
    db = open_database(sys.argv[1])
    while time.time() < float(sys.argv[2]):
        time.sleep(0.001)
    db.prepare(SCHEMA + LEASE)
""")


def test_replicas_starting_at_once_create_the_tables_once(open_db: OpenDatabase) -> None:
    """Four processes prepare one new database at the same moment (on PostgreSQL under an
    advisory lock; SQLite's file is made aside and linked into place): all start, one table."""
    start_at = str(time.time() + 1.5)  # after their imports
    procs = [subprocess.Popen([sys.executable, "-c", PREPARE, open_db.url, start_at],
                              stderr=subprocess.PIPE, text=True) for _ in range(4)]
    for proc in procs:
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
    a, b = BootstrapTokens(open_db()), BootstrapTokens(open_db())
    b.redeem(CLUSTER, a.issue(CLUSTER))
