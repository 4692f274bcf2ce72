"""``fplus rollout create|list`` (the console script, in a child process) against a real
stack: a ``fluxVersion`` rollout of a version never imported refused for every cluster it
targets, nothing written; one of an imported version over three labelled clusters in steps
of one, halted by the first cluster's commissioning failure (its configuration entry broken
by a direct Config Store write while it holds the change), listed beside the others,
followed and aborted by name; a template rollout pinning one named cluster, complete once
its edge reports the new commit synced, promoted (the user writes the default template) and
unpinned; and the refusals (exit 1 or 2, nothing written). The test writes the edge's report
as Edge Sync would."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from fplus.config_store import uuids
from harness.central import flux_export
from harness.servers import Api
from harness.stack import Stack, create_cluster, status, wait_for
from tests.cluster_manager.fleet.test_cluster_rollout_api import new_commit, report
from tests.conftest import grant, make_user
from tests.fplus_cli.test_journey import fplus, login

CONFIG, ROLLOUT = uuids.App.EdgeClusterConfiguration, uuids.App.ClusterRollout
TEMPLATES = uuids.App.FluxTemplate


def config(stack: Stack, cluster: str) -> dict[str, object]:
    """The cluster's configuration entry, as the Config Store holds it."""
    found: dict[str, object] = stack.admin.get(f"/v2/app/{CONFIG}/object/{cluster}").json()
    return found


def head_commit(stack: Stack, cluster: str) -> str:
    """The commit of the cluster's setup status, once it is commissioned."""
    found: str = wait_for(lambda: (status(stack.admin, cluster) or {}).get("commit"),
                          timeout=120, what="commissioned")
    return found


@pytest.fixture(scope="module")
def stack(module_stack: Stack) -> Stack:
    """A stack of its own: a cluster rollout refuses a second one of its kind meanwhile."""
    return module_stack


def test_rollout_create_list_status_abort(stack: Stack, home: dict[str, str],
                                          tmp_path: Path) -> None:
    login(stack, home)
    site = f"s{uuid.uuid4().hex[:8]}"
    named = {create_cluster(stack.admin, f"cli-cr{n}", labels={"site": site}): f"cli-cr{n}"
             for n in range(3)}
    clusters = sorted(named)  # the order of the steps
    create = ("rollout", "create", "cli-up", "-l", f"site={site}", "--step", "1", "--pause",
              "manual", "-o", "json")
    refused = fplus(home, *create, "--flux-version", "v9.9.9", expect=1).stderr
    for cluster, name in named.items():
        assert f"cluster {name} ({cluster}): fluxVersion: Flux v9.9.9 is not in the central " \
               "Flux repo" in refused, refused
    assert "nothing was written" in refused
    assert stack.admin.get(f"/v2/app/{ROLLOUT}/object").json() == []
    assert [config(stack, c).get("fluxVersion") for c in clusters] == [None, None, None]

    export = tmp_path / "flux.yaml"
    export.write_text(flux_export("v2.8.0"))
    fplus(home, "flux", "import", str(export))
    made = json.loads(fplus(home, *create, "--flux-version", "v2.8.0").stdout)
    assert made["kind"] == "cluster" and made["change"] == {"fluxVersion": "v2.8.0"}
    stored = stack.admin.get(f"/v2/app/{ROLLOUT}/object/{made['uuid']}").json()
    assert stored["selector"] == {"matchLabels": {"site": site}}
    assert stored["rollout"] == {"steps": [{"clusters": 1, "pause": "manual"}]}

    # the first step's cluster, once it holds the change, is broken behind the API's back
    wait_for(lambda: config(stack, clusters[0]).get("fluxVersion") == "v2.8.0", timeout=120,
             what="the first step begun")
    missing = str(uuid.uuid4())
    entry = stack.admin.get(f"/v2/app/{CONFIG}/object/{clusters[0]}")
    stack.admin.put(f"/v2/app/{CONFIG}/object/{clusters[0]}",
                    json=entry.json() | {"chart": missing},
                    headers={"If-Match": entry.headers["ETag"]}).raise_for_status()

    def state(want: str, name: str = "cli-up") -> dict[str, object] | None:
        view = json.loads(fplus(home, "rollout", "status", name, "-o", "json").stdout)
        return view if view["state"] == want else None
    view = wait_for(lambda: state("Halted"), timeout=120, what="halted by the failure")
    failed = view["failed"]
    assert isinstance(failed, list) and [f["cluster"] for f in failed] == clusters[:1]
    assert f"unknown chart {missing}" in failed[0]["message"]
    assert [config(stack, c).get("fluxVersion") for c in clusters] == ["v2.8.0", None, None]
    table = fplus(home, "rollout", "list").stdout
    assert "cli-up" in table and "cluster" in table and "Halted" in table
    aborted = fplus(home, "rollout", "abort", "cli-up").stderr
    assert "leaves every cluster as it is" in aborted
    wait_for(lambda: state("Aborted"), timeout=120, what="aborted")

    assert "not a Flux template rollout" in fplus(home, "rollout", "promote", "cli-up",
                                                   expect=1).stderr

    # a template rollout of one named cluster: pinned, ready once synced, then promoted
    before = head_commit(stack, clusters[1])
    template = tmp_path / "template.yaml"
    template.write_text("self-link.yaml: []\ncli.yaml:\n  - {apiVersion: v1, kind: "
                        "ConfigMap, metadata: {name: cli}}\n")
    pinned = json.loads(fplus(home, "rollout", "create", "cli-tpl", "--template",
                              str(template), "--cluster", named[clusters[1]], "-o",
                              "json").stdout)
    assert pinned["change"] == {"fluxTemplate": pinned["uuid"]}
    report(stack, clusters[1], new_commit(stack, clusters[1], before))
    wait_for(lambda: state("Complete", "cli-tpl"), timeout=120, what="complete")
    assert stack.admin.get(f"/v2/app/{CONFIG}/object/{clusters[1]}").json()[
        "fluxTemplate"] == pinned["uuid"]
    assert "promote" in fplus(home, "rollout", "status", "cli-tpl").stdout
    done = fplus(home, "rollout", "promote", "cli-tpl").stderr
    assert "its template is the default" in done
    assert stack.admin.get(f"/v2/app/{TEMPLATES}/object/{TEMPLATES}").json() == {
        "self-link.yaml": [], "cli.yaml": [{"apiVersion": "v1", "kind": "ConfigMap",
                                            "metadata": {"name": "cli"}}]}
    wait_for(lambda: "fluxTemplate" not in stack.admin.get(
        f"/v2/app/{CONFIG}/object/{clusters[1]}").json(), timeout=120, what="unpinned")
    manager = Api(stack.manager.url, stack.admin.auth)
    rows = manager.get("/v1/audit", params={"limit": "1000"}).json()["entries"]
    promoted = [e for e in rows if e["action"] == "rollout.promote"]
    assert [(e["principal"]["name"], e["target"]["uuid"], e["status"]) for e in promoted] == [
        ("admin", pinned["uuid"], 200), ("admin", made["uuid"], 409)]  # one row each

    # the write is the caller's: the cluster permission without write on the template app
    # is refused, naming the grant, and nothing is written or recorded as done
    uid, session = make_user(stack.admin)
    grant(stack.admin, uid, uuids.EdgePerm.Clusters, uuids.NULL)
    default = stack.admin.get(f"/v2/app/{TEMPLATES}/object/{TEMPLATES}").json()
    r = Api(stack.manager.url, session.auth).post(f"/v1/rollout/{pinned['uuid']}/promote")
    assert r.status_code == 403 and "write access to the Flux template app" in r.text, r.text
    assert stack.admin.get(f"/v2/app/{TEMPLATES}/object/{TEMPLATES}").json() == default
    rows = manager.get("/v1/audit", params={"principal": uid}).json()["entries"]
    assert [(e["action"], e["outcome"], e["status"]) for e in rows] == [
        ("rollout.promote", "refused", 403)]

    before = stack.admin.get(f"/v2/app/{ROLLOUT}/object").json()
    assert "exactly one of" in fplus(home, "rollout", "create", "x", expect=2).stderr
    refused = fplus(home, "rollout", "create", "x", "--flux-version", "2.7", expect=1).stderr
    assert "change.fluxVersion" in refused
    assert "--selector" in fplus(home, "rollout", "create", "x", "--flux-version", "v2.7.5",
                                 "--selector", "a in (", expect=2).stderr
    assert stack.admin.get(f"/v2/app/{ROLLOUT}/object").json() == before
