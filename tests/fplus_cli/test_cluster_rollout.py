"""``fplus rollout create|list`` (the console script, in a child process) against a real
stack: a ``fluxVersion`` rollout over three labelled clusters in steps of one, halted by the
first cluster's commissioning failure (a Flux version never imported), listed beside the
others, followed and aborted by name; a template rollout pinning one named cluster; and the
refusals (exit 1 or 2, nothing written)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from fplus.config_store import uuids
from harness.stack import Stack, create_cluster, wait_for
from tests.fplus_cli.test_journey import fplus, login

CONFIG, ROLLOUT = uuids.App.EdgeClusterConfiguration, uuids.App.ClusterRollout


@pytest.fixture(scope="module")
def stack(module_stack: Stack) -> Stack:
    """A stack of its own: a cluster rollout refuses a second one of its kind meanwhile."""
    return module_stack


def test_rollout_create_list_status_abort(stack: Stack, home: dict[str, str],
                                          tmp_path: Path) -> None:
    login(stack, home)
    site = f"s{uuid.uuid4().hex[:8]}"
    clusters = sorted(create_cluster(stack.admin, f"cli-cr{n}", labels={"site": site})
                      for n in range(3))
    made = json.loads(fplus(home, "rollout", "create", "cli-up", "--flux-version", "v9.9.9",
                            "--selector", f"site={site}", "--step", "1", "--pause", "manual",
                            "-o", "json").stdout)
    assert made["kind"] == "cluster" and made["change"] == {"fluxVersion": "v9.9.9"}
    stored = stack.admin.get(f"/v2/app/{ROLLOUT}/object/{made['uuid']}").json()
    assert stored["selector"] == {"matchLabels": {"site": site}}
    assert stored["rollout"] == {"steps": [{"clusters": 1, "pause": "manual"}]}

    def state(want: str) -> dict[str, object] | None:
        view = json.loads(fplus(home, "rollout", "status", "cli-up", "-o", "json").stdout)
        return view if view["state"] == want else None
    view = wait_for(lambda: state("Halted"), timeout=120, what="halted by the failure")
    failed = view["failed"]
    assert isinstance(failed, list) and [f["cluster"] for f in failed] == clusters[:1]
    assert "v9.9.9 is not in the central Flux repo" in failed[0]["message"]
    assert [stack.admin.get(f"/v2/app/{CONFIG}/object/{c}").json().get("fluxVersion")
            for c in clusters] == ["v9.9.9", None, None]
    table = fplus(home, "rollout", "list").stdout
    assert "cli-up" in table and "cluster" in table and "Halted" in table
    aborted = fplus(home, "rollout", "abort", "cli-up").stderr
    assert "leaves every cluster as it is" in aborted
    wait_for(lambda: state("Aborted"), timeout=120, what="aborted")

    template = tmp_path / "template.yaml"
    template.write_text("self-link.yaml: []\n")
    pinned = json.loads(fplus(home, "rollout", "create", "cli-tpl", "--template",
                              str(template), "--cluster", "cli-cr1", "-o", "json").stdout)
    assert pinned["change"] == {"fluxTemplate": pinned["uuid"]}
    wait_for(lambda: stack.admin.get(f"/v2/app/{CONFIG}/object/{clusters[1]}").json().get(
        "fluxTemplate") == pinned["uuid"], timeout=120, what="cli-cr1 pinned")
    fplus(home, "rollout", "abort", pinned["uuid"])

    before = stack.admin.get(f"/v2/app/{ROLLOUT}/object").json()
    assert "exactly one of" in fplus(home, "rollout", "create", "x", expect=2).stderr
    refused = fplus(home, "rollout", "create", "x", "--flux-version", "2.7", expect=1).stderr
    assert "change.fluxVersion" in refused
    assert "--selector" in fplus(home, "rollout", "create", "x", "--flux-version", "v2.7.5",
                                 "--selector", "a in (", expect=2).stderr
    assert stack.admin.get(f"/v2/app/{ROLLOUT}/object").json() == before
