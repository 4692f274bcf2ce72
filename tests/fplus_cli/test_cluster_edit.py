"""``fplus cluster label``, ``fplus cluster set`` and ``list --selector`` (the real command in
a child process) against a real stack; and an edit racing another one, reported and not
overwritten (the command in-process, so the race can be placed between its read and write)."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from fplus.cli.api import ApiError, ManagerApi
from fplus.cli.main import cli
from fplus.cluster_manager.model.apps_and_roles import CONFIG_APP
from harness.central import import_flux
from harness.servers import ADMIN_PASSWORD, Api
from harness.stack import Stack
from tests.cluster_manager.fleet.conftest import CHART, fleet_chart

FPLUS = str(Path(sys.executable).parent / "fplus")
SPEC = {"namespace": "fplus-edge"}
FLUX_VERSION = "v2.7.5"


@pytest.fixture(scope="module")
def stack(shared_stack: Stack) -> Stack:
    """The session's stack: these tests only add and look at clusters of their own (one
    names an ordinary chart template and a Flux version, both imported: one the central
    repos lack is refused)."""
    fleet_chart(shared_stack)
    import_flux(Api(shared_stack.manager.url, shared_stack.admin.auth), FLUX_VERSION)
    return shared_stack


@pytest.fixture
def env(stack: Stack, home: dict[str, str]) -> dict[str, str]:
    """The command's environment: the stack's Cluster Manager as admin (HTTP Basic)."""
    return home | {"FPLUS_URL": stack.manager.url, "FPLUS_USER": "admin",
                   "FPLUS_PASSWORD": ADMIN_PASSWORD}


def fplus(env: dict[str, str], *args: str, stdin: str | None = None,
          expect: int = 0) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([FPLUS, *args], env=env, input=stdin, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == expect, (args, done.returncode, done.stdout, done.stderr)
    return done


def create(stack: Stack, name: str, **extra: Any) -> str:
    r = Api(stack.manager.url, stack.admin.auth).post(
        "/v1/cluster", json={"name": name, **SPEC, **extra})
    assert r.status_code == 201, r.text
    return str(r.json()["uuid"])


def entry(stack: Stack, cluster: str) -> dict[str, Any]:
    r = stack.admin.get(f"/v2/app/{CONFIG_APP}/object/{cluster}")
    assert r.status_code == 200, r.text
    return dict(r.json())


def test_label_sets_and_removes_and_overwrites_only_when_asked(
        stack: Stack, env: dict[str, str]) -> None:
    cluster = create(stack, "cli-label", labels={"site": "leeds", "old": "x"})
    done = fplus(env, "cluster", "label", "cli-label", "tier=line", "old-", "-o", "json")
    assert json.loads(done.stdout)["labels"] == {"site": "leeds", "tier": "line"}
    assert entry(stack, cluster)["labels"] == {"site": "leeds", "tier": "line"}
    refused = fplus(env, "cluster", "label", "cli-label", "site=york", "zone=a", expect=1)
    assert "--overwrite" in refused.stderr and "leeds" in refused.stderr
    assert entry(stack, cluster)["labels"] == {"site": "leeds", "tier": "line"}
    fplus(env, "cluster", "label", cluster, "site=york", "--overwrite")
    assert entry(stack, cluster)["labels"] == {"site": "york", "tier": "line"}
    same = fplus(env, "cluster", "label", "cli-label", "site=york", "gone-")  # no-op value
    assert "'gone' not found" in same.stderr
    for bad in ("-x=1", "site=a b", "site", "a=1 a-"):
        usage = fplus(env, "cluster", "label", "cli-label", *bad.split(" "), expect=2)
        assert "label" in usage.stderr or "key=value" in usage.stderr
    assert entry(stack, cluster)["labels"] == {"site": "york", "tier": "line"}
    table = fplus(env, "cluster", "get", "cli-label").stdout
    assert "LABELS" in table and "site=york,tier=line" in table


def test_set_changes_values_chart_flux_and_sealed_secrets(stack: Stack,
                                                          env: dict[str, str]) -> None:
    cluster = create(stack, "cli-set", values={"keep": 1, "drop": {"a": 1}})
    chart = CHART
    done = fplus(env, "cluster", "set", "cli-set", "--values", "-", "--chart", chart,
                 "--flux-version", FLUX_VERSION, "--no-sealed-secrets", "-o", "json",
                 stdin="keep: 2\nnew: {b: true}\n")
    want = {"name": "cli-set", **SPEC, "values": {"keep": 2, "new": {"b": True}},
            "chart": chart, "fluxVersion": FLUX_VERSION, "sealedSecrets": False}
    assert entry(stack, cluster) == want  # the file replaced the values
    assert {k: json.loads(done.stdout)[k] for k in want} == want
    fplus(env, "cluster", "set", cluster, "--sealed-secrets")
    assert entry(stack, cluster)["sealedSecrets"] is True
    assert "nothing to set" in fplus(env, "cluster", "set", "cli-set", expect=2).stderr
    refused = fplus(env, "cluster", "set", "cli-set", "--flux-version", "latest", expect=1)
    assert "fluxVersion" in refused.stderr
    assert entry(stack, cluster) == want | {"sealedSecrets": True}


def test_list_selects_by_labels_and_shows_them(stack: Stack, env: dict[str, str]) -> None:
    run = uuid.uuid4().hex[:8]
    leeds = create(stack, f"cli-sel-a-{run}", labels={"run": run, "site": "leeds"})
    create(stack, f"cli-sel-b-{run}", labels={"run": run, "site": "york", "legacy": ""})
    listed = json.loads(fplus(env, "cluster", "list", "--selector",
                              f"run={run},site in (leeds,hull),!legacy", "-o", "json").stdout)
    assert [c["uuid"] for c in listed] == [leeds]
    table = fplus(env, "cluster", "list", "-l", f"run={run}", "-o", "wide").stdout
    assert "LABELS" in table and f"run={run},site=leeds" in table
    bad = fplus(env, "cluster", "list", "--selector", "site=le eds", expect=1)
    assert "selector" in bad.stderr


def test_an_edit_racing_another_is_reported_and_nothing_is_overwritten(
        stack: Stack, env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    cluster = create(stack, "cli-race", labels={"site": "leeds"})
    read, edits = ManagerApi.cluster, []

    def read_then_someone_edits(api: ManagerApi, which: str) -> tuple[dict[str, Any], str]:
        answer = read(api, which)
        edits.append(len(edits) + 1)
        r = stack.admin.patch(f"/v2/app/{CONFIG_APP}/object/{which}",
                              json={"values": {"edit": edits[-1]}},
                              headers={"Content-Type": "application/merge-patch+json"})
        assert r.status_code == 204, r.text
        return answer

    monkeypatch.setattr(ManagerApi, "cluster", read_then_someone_edits)
    for args in (["label", "cli-race", "tier=line"], ["set", "cli-race", "--no-sealed-secrets"]):
        result = CliRunner().invoke(cli, ["cluster", *args], env=env)
        assert isinstance(result.exception, ApiError), result.output
        assert result.exception.status == 412 and "changed while" in str(result.exception)
        assert entry(stack, cluster) == {"name": "cli-race", **SPEC,
                                         "labels": {"site": "leeds"},
                                         "values": {"edit": edits[-1]}}
