"""A rollout's preview skips (``offline: skip``) the edges the leader would skip: those that
have not reported within the Cluster Manager's ``--edge-stale-after`` (here 30 s, a third of
the default), or never; on a real stack, the edges' reports written as Edge Sync writes them,
dated in the past rather than waited for."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from fplus.config_store import uuids
from harness.servers import Api
from harness.stack import Stack, create_cluster, start_stack

EDGE = uuids.App.EdgeClusterStatus
STALE_AFTER = 30


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    running = start_stack(tmp_path_factory.mktemp("stale"),
                          manager_extra=("--edge-stale-after", str(STALE_AFTER)))
    yield running
    running.stop()


def reported(stack: Stack, cluster: str, ago: float) -> None:
    """``cluster``'s edge last reported ``ago`` seconds before now."""
    seen = (datetime.now(UTC) - timedelta(seconds=ago)).strftime("%Y-%m-%dT%H:%M:%SZ")
    r = stack.admin.put(f"/v2/app/{EDGE}/object/{cluster}", json={"lastSeen": seen})
    assert r.status_code in (201, 204), r.text


def test_preview_skips_by_the_managers_stale_threshold(stack: Stack) -> None:
    run = uuid.uuid4().hex[:8]
    made = {name: create_cluster(stack.admin, f"{name}-{run}", labels={"st": run})
            for name in ("fresh", "late", "never")}
    reported(stack, made["fresh"], 0)
    reported(stack, made["late"], 2 * STALE_AFTER)  # Online by the default threshold
    root = Api(stack.manager.url, stack.admin.auth)
    body = {"name": f"up-{run}", "change": {"fluxVersion": "v2.7.5"},
            "selector": {"matchLabels": {"st": run}}}

    def skipped(offline: str) -> dict[str, str]:
        r = root.post("/v1/rollout?dryRun", json=body | {"rollout": {"offline": offline}})
        assert r.status_code == 200, r.text
        return {s["uuid"]: s["reason"] for s in r.json()["plan"]["skipped"]}

    found = skipped("skip")
    assert set(found) == {made["late"], made["never"]}
    assert found[made["late"]] == (
        "its edge has not reported within the stale threshold (offline: skip); it gets the "
        "change when its edge reports again")
    assert skipped("wait") == {}
