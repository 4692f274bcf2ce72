"""The audit log on real processes: a sequence of changes gives exactly one row each, with
the right principal, action, target and outcome; each phase the reconciler recorded is one
row naming the Cluster Manager itself; no sealed value and no bootstrap token is
in the table (read from the database file) nor in ``GET /v1/audit``; the permission is
enforced; filters and paging work."""

from __future__ import annotations

import itertools
import json
import os
import sqlite3
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from fplus.cli.audit import since_time
from fplus.config_store import uuids
from harness.certs import make_cert
from harness.servers import Api
from harness.stack import Stack, status, wait_for
from tests.cluster_manager.api.conftest import report_edge
from tests.cluster_manager.api.test_deployments import make_chart
from tests.conftest import grant, make_user
from tests.fplus_cli.test_journey import fplus, login

VALUE = "audit-VALUE-" + uuid.uuid4().hex
AUDIT = uuids.EdgePerm.Audit


@dataclass
class Story:
    """What the module did, and what it must find in the log."""

    cluster: str
    name: str
    operator: str
    operator_name: str
    stranger_name: str
    token: str
    deployment: str
    request_id: str


@pytest.fixture(scope="module")
def story(shared_stack: Stack) -> Story:
    """Create a cluster, seal a secret, remove it, deploy, issue a bootstrap URL, redeem it,
    redeem it again (refused), and be refused a patch: each by a principal of its own."""
    stack = shared_stack
    operator_name = f"auditor-{uuid.uuid4().hex[:8]}"
    operator, session = make_user(stack.admin, operator_name)
    grant(stack.admin, operator, uuids.EdgePerm.Clusters, uuids.NULL)
    grant(stack.admin, operator, uuids.EdgePerm.Secrets, uuids.NULL)
    op = Api(stack.manager.url, session.auth)
    name = f"audit-{uuid.uuid4().hex[:8]}"
    request_id = f"test-{uuid.uuid4().hex}"
    r = op.post("/v1/cluster", json={"name": name, "namespace": "fplus-edge"},
                headers={"X-Request-Id": request_id})
    assert r.status_code == 201, r.text
    assert r.headers["X-Request-Id"] == request_id
    cluster = r.json()["uuid"]
    wait_for(lambda: (status(stack.admin, cluster) or {}).get("ready"), what=f"{name} ready")
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    report_edge(stack, cluster, kubeseal_cert=make_cert(key))
    secret = f"/v1/cluster/{cluster}/secret/app/creds/password"
    r = op.put(secret, data=VALUE.encode())
    assert r.status_code == 204, r.text
    assert op.delete(secret).status_code == 204
    chart = make_chart(stack, f"audit chart {name}")
    r = op.post(f"/v1/cluster/{cluster}/deployment", json={"name": "broker", "chart": chart})
    assert r.status_code == 201, r.text
    deployment = r.json()["uuid"]
    url = op.post(f"/v1/cluster/{cluster}/bootstrap-url").json()
    token = url.split("token=", 1)[1]
    path = url.split(stack.manager.url, 1)[1]
    edge = Api(stack.manager.url)
    assert edge.get(path).status_code == 200
    assert edge.get(path).status_code == 410
    stranger_name = f"stranger-{uuid.uuid4().hex[:8]}"
    _, stranger = make_user(stack.admin, stranger_name)
    r = Api(stack.manager.url, stranger.auth).patch(f"/v1/cluster/{cluster}",
                                                     json={"labels": {"a": "b"}})
    assert r.status_code == 403, r.text
    return Story(cluster, name, operator, operator_name, stranger_name, token,
                 deployment, request_id)


def audit(stack: Stack, **params: str) -> dict:
    r = Api(stack.manager.url, stack.admin.auth).get("/v1/audit", params=params)
    assert r.status_code == 200, r.text
    return r.json()


MANAGER = "cluster-manager"
"""The account the Cluster Manager acts as: its own changes' principal."""


def asked(entries: list[dict]) -> list[dict]:
    """The rows of changes asked through the API (not the Cluster Manager's own)."""
    return [e for e in entries if e["status"] != 0]


def test_one_row_per_change_newest_first(shared_stack: Stack, story: Story) -> None:
    everything = audit(shared_stack, cluster=story.cluster)["entries"]
    entries = asked(everything)
    seen = [(e["action"], e["principal"]["name"], e["target"]["kind"], e["outcome"],
             e["status"], e["reason"]) for e in reversed(entries)]
    op = story.operator_name
    assert seen == [
        ("cluster.create", op, "cluster", "ok", 201, None),
        ("secret.seal", op, "secret", "ok", 204, None),
        ("secret.remove", op, "secret", "ok", 204, None),
        ("deployment.create", op, "deployment", "ok", 201, None),
        ("bootstrap-url.issue", op, "cluster", "ok", 200, None),
        ("bootstrap-url.redeem", None, "cluster", "ok", 200, None),
        ("bootstrap-url.redeem", None, "cluster", "refused", 410, "used"),
        ("cluster.patch", story.stranger_name, "cluster", "refused", 403, None),
    ]
    first = entries[-1]
    assert first["target"] == {"kind": "cluster", "uuid": story.cluster, "name": story.name}
    assert first["principal"]["uuid"] == story.operator
    assert first["requestId"] == story.request_id
    assert entries[-2]["target"] == {"kind": "secret", "uuid": None,
                                     "name": "app/creds/password"}
    assert entries[-4]["target"] == {"kind": "deployment", "uuid": story.deployment,
                                     "name": "broker"}
    # the cluster's name as the bootstrap route read it, or (a refused redeem, refused
    # before the route reads the cluster) as its configuration entry has it
    assert [e["target"] for e in entries[-7:-4]] == [
        {"kind": "cluster", "uuid": story.cluster, "name": story.name}] * 3
    assert all(e["cluster"] == story.cluster for e in everything)
    assert len({e["requestId"] for e in everything}) == len(everything)


def test_each_phase_reached_is_one_row_of_the_cluster_manager(shared_stack: Stack,
                                                             story: Story) -> None:
    entries = audit(shared_stack, cluster=story.cluster)["entries"]
    own = [e for e in reversed(entries) if e["status"] == 0]
    assert [e["reason"] for e in own[:2]] == ["Provisioning", "Ready"]
    phases = [e["reason"] for e in own]
    assert all(a != b for a, b in itertools.pairwise(phases)), phases  # changes only
    assert phases[-1] == status(shared_stack.admin, story.cluster)["phase"]
    for e in own:
        assert (e["action"], e["principal"]["name"], e["outcome"], e["target"]) == (
            "phase.changed", MANAGER, "ok",
            {"kind": "cluster", "uuid": story.cluster, "name": story.name})
        assert e["principal"]["uuid"]
    created = next(e for e in entries if e["action"] == "cluster.create")
    assert own[0]["seq"] > created["seq"]  # recorded once the reconciler wrote it


def test_no_value_or_token_in_the_table_or_the_answer(shared_stack: Stack,
                                                      story: Story) -> None:
    path = shared_stack.root / "cm" / "bootstrap-tokens.sqlite"
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        rows = db.execute("SELECT * FROM cm_audit").fetchall()
    dumped = repr(rows)
    assert story.cluster in dumped  # the table read is the one written
    assert VALUE not in dumped and story.token not in dumped
    answer = Api(shared_stack.manager.url, shared_stack.admin.auth).get(
        "/v1/audit", params={"cluster": story.cluster}).text
    assert VALUE not in answer and story.token not in answer


def test_the_permission_is_enforced(shared_stack: Stack, story: Story) -> None:
    stack = shared_stack
    url = stack.manager.url
    assert Api(url).get("/v1/audit").status_code == 401
    uid, session = make_user(stack.admin)
    user = Api(url, session.auth)
    grant(stack.admin, uid, uuids.EdgePerm.Clusters, uuids.NULL)  # not the audit permission
    assert user.get("/v1/audit").status_code == 403
    other, on_cluster = make_user(stack.admin)
    grant(stack.admin, other, AUDIT, story.cluster)
    reader = Api(url, on_cluster.auth)
    assert reader.get("/v1/audit").status_code == 403  # every cluster needs the wildcard
    r = reader.get("/v1/audit", params={"cluster": story.cluster})
    assert r.status_code == 200 and len(asked(r.json()["entries"])) == 8
    third, wildcard = make_user(stack.admin)
    grant(stack.admin, third, AUDIT, uuids.NULL)
    assert Api(url, wildcard.auth).get("/v1/audit").status_code == 200


def test_filters_and_paging(shared_stack: Stack, story: Story) -> None:
    every = audit(shared_stack, cluster=story.cluster)["entries"]
    pages, after = [], None
    while True:
        params = {"cluster": story.cluster, "limit": "3", **({"after": after} if after else {})}
        page = audit(shared_stack, **params)
        pages += page["entries"]
        after = page["next"]
        if after is None:
            break
    assert pages == every
    mine = audit(shared_stack, principal=story.operator_name)["entries"]
    assert [e["action"] for e in mine][-1] == "cluster.create" and len(mine) == 5
    assert audit(shared_stack, principal=story.operator)["entries"] == mine
    assert audit(shared_stack, since="2999-01-01T00:00:00Z")["entries"] == []
    assert audit(shared_stack, cluster=story.cluster,
                 since=every[-1]["time"])["entries"] == every


@pytest.mark.parametrize(("params", "words"), [
    ({"cluster": "not-a-uuid"}, "cluster"), ({"since": "yesterday"}, "since"),
    ({"principal": ""}, "principal"), ({"limit": "0"}, "limit"), ({"after": "x"}, "after"),
    ({"what": "1"}, "what"),
])
def test_bad_queries_are_refused(shared_stack: Stack, params: dict, words: str) -> None:
    r = Api(shared_stack.manager.url, shared_stack.admin.auth).get("/v1/audit", params=params)
    assert r.status_code == 400 and words in r.json()["error"], r.text


@pytest.fixture
def home(tmp_path: Path) -> dict[str, str]:
    """An environment with its own fplus config dir and none of the caller's credentials."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("FPLUS_") and k != "CONFIG_STORE_URL"}
    return env | {"XDG_CONFIG_HOME": str(tmp_path / "config"), "NO_COLOR": "1"}


def test_fplus_audit(shared_stack: Stack, story: Story, home: dict[str, str]) -> None:
    login(shared_stack, home)
    shown = json.loads(fplus(home, "audit", "--cluster", story.name, "-o", "json").stdout)
    assert shown == audit(shared_stack, cluster=story.cluster)["entries"]
    # -o wide: the default table shortens prose to fit 80 columns
    table = fplus(home, "audit", "--cluster", story.cluster, "--since", "1h", "-o", "wide").stdout
    assert "refused 410 (used)" in table and "secret app/creds/password" in table
    assert "refused 403" in table and story.stranger_name in table
    assert "phase.changed" in table and "ok (Ready)" in table and "cluster-manager" in table
    two = json.loads(fplus(home, "audit", "--principal", story.operator_name, "--limit", "2",
                           "-o", "json").stdout)
    assert [e["action"] for e in two] == ["bootstrap-url.issue", "deployment.create"]
    assert json.loads(fplus(home, "audit", "--cluster", story.cluster, "--since",
                            "2999-01-01T00:00:00Z", "-o", "json").stdout) == []
    assert "--since" in fplus(home, "audit", "--since", "yesterday", expect=2).stderr


def test_since_takes_a_time_or_a_duration() -> None:
    now = datetime(2026, 1, 31, 12, 0, tzinfo=UTC)
    assert since_time("30m", now) == "2026-01-31T11:30:00Z"
    assert since_time("7d", now) == "2026-01-24T12:00:00Z"
    assert since_time("2026-01-02T03:04:05", now) == "2026-01-02T03:04:05Z"
    assert since_time("2026-01-02T04:04:05+01:00", now) == "2026-01-02T03:04:05Z"
