"""One language for operators, as the real ``fplus`` (at ``COLUMNS=80``) speaks it against a
real stack: charts named by name in ``fleet create`` and ``cluster create`` (problem 1);
``-l/--selector`` a selector string everywhere, a selector file ``-f/--file`` (2); names in
tables and messages, UUIDs in ``-o wide`` (3); ``cluster list`` one line a cluster at 80
columns (4); the wording (5): ``--host`` without "null", ``fplus:`` errors, sealing before a
bootstrap naming ``fplus cluster bootstrap``, STARTED as ``N of M``, a Failed cluster's last
report; and ``logout``, ``cluster describe`` and ``cluster create --label``."""

from __future__ import annotations

import json
import re
import uuid
from datetime import UTC, datetime
from pathlib import Path

import pytest
import requests

from harness.stack import Stack, create_cluster, wait_for
from tests.cluster_manager.api.conftest import report_edge
from tests.cluster_manager.api.test_cluster_list import seed_failing
from tests.cluster_manager.fleet.conftest import CHART, fleet_chart
from tests.fplus_cli.test_journey import fplus, login

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-")


@pytest.fixture(scope="module")
def stack(shared_stack: Stack) -> Stack:
    """The session's stack: these tests only add and look at objects of their own."""
    fleet_chart(shared_stack)
    return shared_stack


@pytest.fixture
def env(home: dict[str, str], stack: Stack) -> dict[str, str]:
    """A logged-in user on an 80-column terminal."""
    login(stack, home)
    return home | {"COLUMNS": "80"}


def chart_name(env: dict[str, str]) -> str:
    charts = json.loads(fplus(env, "chart", "list", "-o", "json").stdout)
    return next(str(c["name"]) for c in charts if c["uuid"] == CHART)


def shows_name(row: str, name: str) -> bool:
    """Whether a cell of the table ``row`` shows ``name``, whole or cut short with an
    ellipsis (how much fits at 80 columns depends on the other rows of the shared stack)."""
    return any(cell == name or (cell.endswith("…") and len(cell) > 1
                                and name.startswith(cell[:-1]))
               for cell in re.split(r"\s{2,}", row.strip()))


def test_charts_and_selectors_by_name_and_string(env: dict[str, str], tmp_path: Path) -> None:
    tag = "ol" + uuid.uuid4().hex[:6]
    chart = chart_name(env)
    made = json.loads(fplus(env, "cluster", "create", f"{tag}-a", "--chart", chart,
                            "--label", f"site={tag}a", "--label", "tier=line",
                            "-o", "json").stdout)
    assert made["chart"] == CHART and made["labels"] == {"site": f"{tag}a", "tier": "line"}
    fleet = json.loads(fplus(env, "fleet", "create", f"{tag}-f", "--chart", chart, "-l",
                             f"site in ({tag}a,{tag}b)", "-o", "json").stdout)
    assert fleet["spec"]["chart"] == CHART
    assert fleet["spec"]["selector"] == {"matchExpressions": [
        {"key": "site", "operator": "In", "values": [f"{tag}a", f"{tag}b"]}]}
    both = json.loads(fplus(env, "fleet", "create", f"{tag}-g", "--chart", chart, "--selector",
                            f"site={tag}a,tier=line", "-o", "json").stdout)
    assert both["spec"]["selector"] == {"matchLabels": {"site": f"{tag}a", "tier": "line"}}
    whole = tmp_path / "selector.yaml"
    whole.write_text("matchExpressions: [{key: tier, operator: Exists}]\n")
    filed = json.loads(fplus(env, "fleet", "create", f"{tag}-h", "--chart", chart, "-f",
                             str(whole), "-l", f"site={tag}a", "-o", "json").stdout)
    assert filed["spec"]["selector"] == {"matchLabels": {"site": f"{tag}a"},
                                         "matchExpressions": [{"key": "tier",
                                                               "operator": "Exists"}]}
    bad = fplus(env, "fleet", "create", f"{tag}-x", "--chart", chart, "-l", "site in (",
                expect=2).stderr
    assert bad.startswith("fplus: ") and "--selector" in bad and "--help" in bad, bad

    listed = fplus(env, "fleet", "list").stdout
    row = next(line for line in listed.splitlines() if line.startswith(f"{tag}-f "))
    assert shows_name(row, chart) and not UUID.search(row), listed
    assert fleet["uuid"] in fplus(env, "fleet", "list", "-o", "wide").stdout
    deployments = wait_for(lambda: (out := fplus(env, "deploy", "list", "-c", f"{tag}-a")
                                    .stdout) and f"{tag}-f" in out and out,
                           timeout=120, what="the fleet's deployment")
    row = next(line for line in deployments.splitlines() if f"{tag}-f" in line)
    assert shows_name(row, chart) and not UUID.search(row), deployments


def test_list_fits_80_columns_and_wide_has_uuids(stack: Stack, env: dict[str, str]) -> None:
    tag = "ow" + uuid.uuid4().hex[:6]
    names = [f"{tag}-{'x' * 11}{n}" for n in range(2)]  # 20 characters
    made = [create_cluster(stack.admin, name, labels={"site": "leeds"}) for name in names]
    failed = seed_failing(stack, [f"{tag}-failed"])
    lines = fplus(env, "cluster", "list", "-s", tag).stdout.splitlines()
    assert lines[0].split()[:2] == ["NAME", "PHASE"] and "UUID" not in lines[0], lines
    rows = lines[2:]  # [1]: the rule under the header
    assert [line.split()[0] for line in rows] == sorted([*names, f"{tag}-failed"]), lines
    assert all(len(line) <= 80 for line in lines), lines
    wide = fplus(env, "cluster", "list", "-s", tag, "-o", "wide").stdout
    assert all(c in wide for c in [*made, *failed]) and "site=leeds" in wide
    bare = fplus(env, "cluster", "list", "-s", tag, "--no-headers").stdout.splitlines()
    assert [line.split()[:5] for line in bare] == [line.split()[:5] for line in rows]


def test_a_failed_cluster_shows_its_edges_last_report(stack: Stack,
                                                      env: dict[str, str]) -> None:
    tag = "of" + uuid.uuid4().hex[:6]
    [cluster] = seed_failing(stack, [f"{tag}-failed"])
    seen = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    report_edge(stack, cluster, lastSeen=seen, hosts=[])
    [row] = json.loads(fplus(env, "cluster", "list", "-s", tag, "-o", "json").stdout)
    assert row["phase"] == "Failed" and row["lastSeen"] == seen, row
    line = fplus(env, "cluster", "list", "-s", tag).stdout.splitlines()[2]
    assert re.search(r"Failed\s+Unknown\s+(\d+s ago|just now)", line), line


def test_wording_and_errors(stack: Stack, env: dict[str, str]) -> None:
    assert "null" not in fplus(env, "deploy", "create", "--help").stdout
    tag = "oe" + uuid.uuid4().hex[:6]
    cluster = create_cluster(stack.admin, f"{tag}-edge")
    wait_for(lambda: json.loads(fplus(env, "cluster", "get", f"{tag}-edge", "-o", "json")
                                .stdout)["ready"], timeout=120, what="ready")
    label = fplus(env, "cluster", "label", f"{tag}-edge", "site=a b", expect=2).stderr
    assert label.startswith("fplus: ") and "Error" not in label, label
    fplus(env, "cluster", "label", f"{tag}-edge", "site=a")
    taken = fplus(env, "cluster", "label", f"{tag}-edge", "site=b", expect=1).stderr
    assert taken.startswith("fplus: ") and "--overwrite" in taken, taken
    sealed = fplus(env, "secret", "seal", f"{tag}-edge", "fplus-edge/db", "password",
                   stdin="x", expect=1).stderr
    assert sealed.startswith("fplus: ") and "fplus cluster bootstrap" in sealed, sealed
    assert f"{tag}-edge ({cluster})" in sealed, sealed
    host = fplus(env, "deploy", "create", "-c", f"{tag}-edge", "--name", "h", "--chart", CHART,
                 "--host", "edge-9", expect=1).stderr
    assert f"cluster {tag}-edge ({cluster}) reported no host" in host, host
    assert "null" not in host, host


def test_logout_forgets_and_ends_the_token(stack: Stack, env: dict[str, str],
                                           tmp_path: Path) -> None:
    saved = tmp_path / "config" / "fplus" / "config.json"
    token = json.loads(saved.read_text())["token"]
    said = fplus(env, "logout").stderr
    assert "Logged out" in said and "token ended" in said, said
    assert "token" not in json.loads(saved.read_text())
    assert requests.get(f"{stack.store.url}/v2/whoami", timeout=10,
                        headers={"Authorization": f"Bearer {token}"}).status_code == 401
    assert "not logged in" in fplus(env, "cluster", "list", expect=1).stderr


def test_describe_is_one_page(stack: Stack, env: dict[str, str]) -> None:
    tag = "od" + uuid.uuid4().hex[:6]
    cluster = json.loads(fplus(env, "cluster", "create", f"{tag}-edge", "--label", "site=a",
                               "--chart", chart_name(env), "--wait", "-o", "json").stdout)["uuid"]
    page = fplus(env, "cluster", "describe", f"{tag}-edge").stdout
    for heading in ("Name:", "Configuration:", "Values:", "Sealing key:", "Deployments:",
                    "History (newest 10):"):
        assert heading in page, page
    assert cluster in page and "site=a" in page and "cluster.create" in page, page
    whole = json.loads(fplus(env, "cluster", "describe", cluster, "-o", "json").stdout)
    assert whole["status"]["phase"] in ("Ready", "Online")
    assert whole["configuration"]["labels"] == {"site": "a"}
