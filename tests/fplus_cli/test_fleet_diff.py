"""``fplus fleet diff NAME`` against a changed spec, on a real stack through the ``fplus``
command: each cluster's Edge deployment diff with its resolved values, a cluster that would
refuse the change named with exit 1, and nothing changed either way."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from fplus.config_store import uuids
from harness.stack import Stack, create_cluster
from tests.cluster_manager.fleet.conftest import fleet_chart
from tests.fplus_cli.test_journey import fplus, login


@pytest.fixture(scope="module")
def stack(module_stack: Stack) -> Stack:
    fleet_chart(module_stack)
    return module_stack


def absent_chart(stack: Stack) -> str:
    """A Helm chart template whose chart was never imported."""
    made = stack.admin.post("/v2/object", json={"class": uuids.Class.HelmChart}).json()["uuid"]
    r = stack.admin.put(f"/v2/app/{uuids.App.HelmChartTemplate}/object/{made}",
                        json={"chart": "never-imported", "values": {}})
    assert r.status_code in (201, 204), r.text
    return str(made)


def test_fleet_diff_shows_the_change_and_changes_nothing(stack: Stack, home: dict[str, str],
                                                         tmp_path: Path) -> None:
    login(stack, home)
    run = uuid.uuid4().hex[:8]
    cluster = create_cluster(stack.admin, f"diff-{run}", labels={"fd": run})
    blue, green = tmp_path / "blue.yaml", tmp_path / "green.yaml"
    blue.write_text("colour: blue\nsize: 2\n")
    green.write_text("colour: green\nsize: 2\n")
    fplus(home, "fleet", "create", f"hist-{run}", "--chart", "Fleet test chart",
          "-l", f"fd={run}", "--values", str(blue))

    def spec() -> object:
        return json.loads(fplus(home, "fleet", "status", f"hist-{run}", "-o",
                                "json").stdout)["spec"]

    before = spec()
    shown = fplus(home, "fleet", "diff", f"hist-{run}", "--values", str(green)).stdout
    assert f"step 1: diff-{run} ({cluster})" in shown
    assert f"=== cluster diff-{run} ({cluster})" in shown
    assert f"--- a/deployment/hist-{run}" in shown
    assert '-    "colour": "blue",' in shown and '+    "colour": "green",' in shown
    assert '     "size": 2' in shown  # the resolved values around the change

    answer = json.loads(fplus(home, "fleet", "diff", f"hist-{run}", "--values", str(green),
                              "-o", "json").stdout)
    assert answer["dryRun"] is True and answer["refused"] == []
    refused = fplus(home, "fleet", "diff", f"hist-{run}", "--chart", absent_chart(stack),
                    expect=1)
    assert "refused: chart: chart never-imported is not in the shared charts repo" \
        in refused.stdout
    assert "1 cluster(s) would refuse this change; nothing was changed" in refused.stderr
    assert spec() == before
