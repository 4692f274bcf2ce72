"""The real ``fplus deploy`` and ``fplus chart`` commands (the console script, in a child
process) against a real stack: chart list → deploy create (values from stdin, chart and
cluster by name) → list → get → move to another host → floating → delete, what is written
checked in the Config Store, and the refusals: an unreported host, a usage error."""

from __future__ import annotations

import json
import uuid

import pytest
import yaml

from fplus.config_store import uuids
from harness.stack import Stack, create_cluster
from tests.cluster_manager.api.conftest import report_edge
from tests.cluster_manager.api.test_deployments import HOSTS, make_chart
from tests.fplus_cli.test_journey import fplus, login

DEPLOYMENT = uuids.App.EdgeDeployment


@pytest.fixture(scope="module")
def stack(shared_stack: Stack) -> Stack:
    """The session's stack: these tests only add and look at objects of their own."""
    return shared_stack


def test_deploy_journey(stack: Stack, home: dict[str, str]) -> None:
    login(stack, home)
    chart_name = f"Historian {uuid.uuid4().hex[:6]}"
    chart = make_chart(stack, chart_name, chart="historian")
    name = f"cli-dep-{uuid.uuid4().hex[:8]}"
    cluster = create_cluster(stack.admin, name)
    report_edge(stack, cluster, hosts=HOSTS)

    charts = {c["uuid"]: c for c in json.loads(fplus(home, "chart", "list", "-o",
                                                     "json").stdout)}
    assert charts[chart]["name"] == chart_name and charts[chart]["system"] is False
    assert charts[uuids.Shared.EdgeClusterChart]["system"] is True
    table = fplus(home, "chart", "list").stdout
    assert chart_name in table and "SYSTEM" in table

    created = json.loads(fplus(home, "deploy", "create", "--cluster", name, "--name",
                               "historian", "--chart", chart_name, "--host", "edge-1",
                               "--values", "-", "-o", "json",
                               stdin="retention: 30d\nreplicas: 2\n").stdout)
    d = created["uuid"]
    entry = stack.admin.get(f"/v2/app/{DEPLOYMENT}/object/{d}").json()
    assert entry | {"createdAt": None} == {
        "name": "historian", "cluster": cluster, "chart": chart, "hostname": "edge-1",
        "values": {"retention": "30d", "replicas": 2}, "createdAt": None}

    assert [x["uuid"] for x in json.loads(fplus(home, "deploy", "list", "-c", cluster,
                                                "-o", "json").stdout)] == [d]
    assert fplus(home, "deploy", "list", "-c", name, "-q").stdout.split() == [d]
    got = yaml.safe_load(fplus(home, "deploy", "get", "-c", name, "historian", "-o",
                               "yaml").stdout)
    assert got == created

    moved = json.loads(fplus(home, "deploy", "move", "-c", name, "historian", "--host",
                             "edge-2", "-o", "json").stdout)
    assert moved["hostname"] == "edge-2"
    assert stack.admin.get(f"/v2/app/{DEPLOYMENT}/object/{d}").json()["hostname"] == "edge-2"
    fplus(home, "deploy", "move", "-c", name, d, "--floating")
    assert "hostname" not in stack.admin.get(f"/v2/app/{DEPLOYMENT}/object/{d}").json()
    assert "(floating)" in fplus(home, "deploy", "list", "-c", name).stdout

    refused = fplus(home, "deploy", "move", "-c", name, "historian", "--host", "edge-9",
                    expect=1)
    assert "hostname" in refused.stderr and "edge-9" in refused.stderr
    assert "hostname" not in stack.admin.get(f"/v2/app/{DEPLOYMENT}/object/{d}").json()
    usage = fplus(home, "deploy", "move", "-c", name, "historian", expect=2)
    assert "--host" in usage.stderr and "--floating" in usage.stderr

    fplus(home, "deploy", "delete", "-c", name, "historian")
    assert stack.admin.get(f"/v2/app/{DEPLOYMENT}/object/{d}").status_code == 404
    gone = fplus(home, "deploy", "get", "-c", name, "historian", expect=1)
    assert "no deployment named historian" in gone.stderr


def test_create_refusals_write_nothing(stack: Stack, home: dict[str, str]) -> None:
    login(stack, home)
    chart = make_chart(stack, f"Bridge {uuid.uuid4().hex[:6]}")
    cluster = create_cluster(stack.admin, f"cli-dep-{uuid.uuid4().hex[:8]}")
    refused = fplus(home, "deploy", "create", "-c", cluster, "--name", "x", "--chart", chart,
                    "--host", "edge-1", expect=1)
    assert "reported no host 'edge-1'" in refused.stderr
    bad_values = fplus(home, "deploy", "create", "-c", cluster, "--name", "x", "--chart",
                       chart, "--values", "-", stdin="- a list\n", expect=2)
    assert "must hold a mapping" in bad_values.stderr
    unknown = fplus(home, "deploy", "create", "-c", cluster, "--name", "x", "--chart",
                    "no-such-chart", expect=1)
    assert "no chart template named no-such-chart: `fplus chart list`" in unknown.stderr
    assert json.loads(fplus(home, "deploy", "list", "-c", cluster, "-o", "json").stdout) == []
