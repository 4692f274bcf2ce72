"""``fplus rollout status|pause|resume|abort`` (the console script, in a child process)
against a real stack: a fleet deployment created with ``--rollout`` over two clusters, a
manual pause resumed, an abort, and a refusal (exit 1)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from harness.stack import Stack, create_cluster, wait_for
from tests.cluster_manager.fleet.conftest import CHART, fleet_chart
from tests.cluster_manager.fleet.test_rollout_api import report
from tests.fplus_cli.test_fleet import made_by
from tests.fplus_cli.test_journey import fplus, login


@pytest.fixture(scope="module")
def stack(shared_stack: Stack) -> Stack:
    """The session's stack: these tests only add and look at objects of their own."""
    fleet_chart(shared_stack)
    return shared_stack


def test_rollout_commands(stack: Stack, home: dict[str, str], tmp_path: Path) -> None:
    login(stack, home)
    site = f"s{uuid.uuid4().hex[:8]}"
    clusters = sorted(create_cluster(stack.admin, f"cli-ro{n}", labels={"site": site})
                      for n in range(3))
    paced = tmp_path / "rollout.yaml"
    paced.write_text("steps:\n  - clusters: 1\n    pause: manual\n  - clusters: 1\n")
    name = f"paced-{site}"
    fleet = json.loads(fplus(home, "fleet", "create", name, "--chart", CHART, "-l",
                             f"site={site}", "--rollout", str(paced), "-o", "json").stdout)
    f = fleet["uuid"]
    assert fleet["spec"]["rollout"]["steps"][0] == {"clusters": 1, "pause": "manual"}
    wait_for(lambda: set(made_by(stack, f)) == {clusters[0]}, timeout=120, what="step 1")
    report(stack, clusters[0], f)

    def state(want: str) -> dict[str, object] | None:
        view = json.loads(fplus(home, "rollout", "status", name, "-o", "json").stdout)
        return view if view["state"] == want else None
    view = wait_for(lambda: state("Paused"), timeout=120, what="the manual pause")
    assert view["updated"] == [clusters[0]]
    table = fplus(home, "rollout", "status", name).stdout
    assert "Paused" in table and "Done" in table and "1/3" in table and "1 of 1" in table
    assert "pause needs it Progressing" in fplus(home, "rollout", "pause", name,
                                                  expect=1).stderr
    assert f"rollout {f}: resume requested" in fplus(home, "rollout", "resume", f).stderr
    wait_for(lambda: set(made_by(stack, f)) == set(clusters[:2]), timeout=120, what="step 2")
    aborted = fplus(home, "rollout", "abort", name).stderr
    assert "leaves every cluster as it is" in aborted
    assert aborted.startswith(f"rollout {name} ({f}): abort requested"), aborted
    wait_for(lambda: state("Aborted"), timeout=120, what="aborted")
    assert set(made_by(stack, f)) == set(clusters[:2])
    assert "no rollout named nope" in fplus(home, "rollout", "status", "nope",
                                                 expect=1).stderr
