"""Re-sealing when one cluster's escrow cannot be used: the others are still re-sealed."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

import pytest

from harness.servers import Api
from harness.stack import Stack, wait_for
from tests.cluster_manager.api.test_metrics import sample
from tests.cluster_manager.escrow.conftest import (
    approve,
    bootstrap,
    database,
    layout,
    new_key,
    rows,
    seal_all,
    secret_files,
    start,
    swap_certificate,
    wait_resealed,
)
from tests.cluster_manager.escrow.unseal import unseal_file


@pytest.fixture(scope="module")
def faulty_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """A stack of its own: a row in its database is spoiled on purpose."""
    running = start(tmp_path_factory.mktemp("escrow-faults"), escrow=True)
    yield running
    running.stop()


def test_a_spoiled_row_does_not_stop_other_clusters(faulty_stack: Stack) -> None:
    api = Api(faulty_stack.manager.url, faulty_stack.admin.auth)
    first, second = sorted((bootstrap(faulty_stack, "fault-a"),
                            bootstrap(faulty_stack, "fault-b")), key=lambda c: c.uuid)
    seal_all(faulty_stack, first.uuid, layout(2, several_every=1), tag=b"first")
    values = seal_all(faulty_stack, second.uuid, layout(2, several_every=1), tag=b"second")
    spoiled, donor = sorted(rows(faulty_stack, first.uuid))[:2]
    with sqlite3.connect(database(faulty_stack), timeout=10) as db:  # a row moved elsewhere
        db.execute("UPDATE cm_sealed_keys SET ciphertext=(SELECT ciphertext FROM "
                   "cm_sealed_keys WHERE cluster=? AND namespace=? AND name=? AND "
                   "secret_key=?) WHERE cluster=? AND namespace=? AND name=? AND "
                   "secret_key=?", (first.uuid, *donor, first.uuid, *spoiled))

    for cluster in (first, second):
        swap_certificate(faulty_stack, cluster, new_key())
        approve(api, cluster, cluster.key)
    wait_resealed(api, second.uuid, second.key, timeout=15)
    found = {(d["metadata"]["namespace"], d["metadata"]["name"], k): v
             for d in secret_files(faulty_stack, second.uuid).values()
             for k, v in unseal_file(second.key, d).items()}
    assert found == values
    # the spoiled cluster says why in its status, and keeps its keys pending
    spoiled_status = wait_for(
        lambda: (s := api.get(f"/v1/cluster/{first.uuid}/status").json().get("secrets", {}))
        .get("error") and s, timeout=15, what="the spoiled cluster's re-seal error")
    assert "EnvelopeError" in spoiled_status["error"] and spoiled_status["pending"] > 0
    # /metrics counts the keys waiting for a re-seal: the spoiled cluster's, no other's
    assert sample(api.get("/metrics").text, "cluster_manager_reseals_pending") == \
        spoiled_status["pending"]
