"""``fplus fleet create|list|status|delete`` (the console script, in a child process) against a
real stack: a fleet deployment over labelled clusters, its roll-up, a refusal naming the
field (exit 1), and deletion."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from fplus.config_store import uuids
from harness.stack import Stack, create_cluster, wait_for
from tests.cluster_manager.fleet.conftest import CHART, fleet_chart
from tests.fplus_cli.test_journey import fplus, login

DEPLOYMENT = uuids.App.EdgeDeployment


@pytest.fixture(scope="module")
def stack(shared_stack: Stack) -> Stack:
    """The session's stack: these tests only add and look at objects of their own."""
    fleet_chart(shared_stack)
    return shared_stack


def made_by(stack: Stack, fleet: str) -> dict[str, dict[str, object]]:
    """The Edge deployments ``fleet`` made, by cluster."""
    found = {}
    for obj in stack.admin.get(f"/v2/app/{DEPLOYMENT}/object").json():
        entry = stack.admin.get(f"/v2/app/{DEPLOYMENT}/object/{obj}").json()
        if isinstance(entry, dict) and entry.get("fleetDeployment") == fleet:
            found[str(entry["cluster"])] = entry
    return found


def test_fleet_commands(stack: Stack, home: dict[str, str], tmp_path: Path) -> None:
    login(stack, home)
    site = f"s{uuid.uuid4().hex[:8]}"
    a = create_cluster(stack.admin, "cli-fa", labels={"site": site})
    b = create_cluster(stack.admin, "cli-fb", labels={"site": "other"})
    values, override = tmp_path / "values.yaml", tmp_path / "b.yaml"
    values.write_text("replicas: 1\n")
    override.write_text("replicas: 3\n")
    name = f"hist-{site}"
    created = json.loads(fplus(
        home, "fleet", "create", name, "--chart", CHART, "-l", f"site={site}",
        "--cluster", "cli-fb", "--values", str(values), "--override", f"{b}={override}",
        "-o", "json").stdout)
    fleet = created["uuid"]
    assert created["spec"]["selector"] == {"matchLabels": {"site": site}}
    assert created["spec"]["clusters"] == [b] and created["total"] == 2
    found = wait_for(lambda: (m := made_by(stack, fleet)) and len(m) == 2 and m,
                     what="two deployments")
    assert {c: e["values"] for c, e in found.items()} == {a: {"replicas": 1},
                                                          b: {"replicas": 3}}

    listed = json.loads(fplus(home, "fleet", "list", "-o", "json").stdout)
    assert [f["name"] for f in listed if f["uuid"] == fleet] == [name]
    assert name in fplus(home, "fleet", "list").stdout
    assert fplus(home, "fleet", "list", "-q").stdout.split().count(fleet) == 1
    view = json.loads(fplus(home, "fleet", "status", name, "-o", "json").stdout)
    assert view["uuid"] == fleet and view["total"] == 2 and view["unknown"] == 2
    assert {c["cluster"] for c in view["clusters"]} == {a, b}
    table = fplus(home, "fleet", "status", fleet).stdout
    assert "cli-fa" in table and "unknown" in table

    refused = fplus(home, "fleet", "create", "x", "--chart", str(uuid.uuid4()), "-l",
                    "site=y", expect=1)
    assert refused.stderr.startswith("fplus: chart:"), refused.stderr
    assert fplus(home, "fleet", "create", "x", "--chart", CHART, expect=1).stderr.startswith(
        "fplus: selector:")
    assert "is not a requirement" in fplus(home, "fleet", "create", "x", "--chart", CHART,
                                           "-l", "site=(x)", expect=2).stderr

    fplus(home, "fleet", "delete", name)
    wait_for(lambda: made_by(stack, fleet) == {}, what="its deployments removed")
    gone = fplus(home, "fleet", "status", name, expect=1).stderr
    assert gone.startswith(f"fplus: no fleet deployment named {name}: `fplus fleet list`"), gone
