"""Bootstrap tokens in PostgreSQL shared by two replicas: a URL issued through one is honoured
once through either; the database's loss is a 503 with Retry-After and its return needs no
restart; a database unreachable at start is one line naming it without its password."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.postgres import PostgresServer
from harness.servers import Api, free_port, run_command
from harness.stack import create_cluster, status, wait_for
from tests.cluster_manager.ha.replicas import Replicas


@pytest.fixture(scope="module")
def ready_cluster(replicas: Replicas) -> str:
    admin = replicas.stack.admin
    cluster = create_cluster(admin, "two-replicas")
    wait_for(lambda: (status(admin, cluster) or {}).get("ready"), 60, "the cluster ready")
    return cluster


def _through(url: str, replica_url: str) -> str:
    """The bootstrap URL sent to another replica (same path and token)."""
    return replica_url + url[url.index("/v1/"):]


def test_a_url_issued_by_one_replica_works_once_on_any(replicas: Replicas,
                                                       ready_cluster: str) -> None:
    a, b = replicas.replicas
    r = replicas.root(a).post(f"/v1/cluster/{ready_cluster}/bootstrap-url")
    assert r.status_code == 200, r.text
    url = r.json()
    assert url.startswith(a.url)
    assert Api("").head(_through(url, b.url)).status_code == 200  # checks, uses nothing up
    served = Api("").get(_through(url, b.url))
    assert served.status_code == 200, served.text
    assert served.text.startswith("#!")
    for replica in (a, b):
        again = Api("").get(_through(url, replica.url), headers={"Accept": "application/json"})
        assert again.status_code == 410, again.text
        assert "used already" in again.json()["error"]


def test_losing_the_database_is_a_503_until_it_returns(replicas: Replicas, ready_cluster: str,
                                                       own_postgres: PostgresServer) -> None:
    a, b = replicas.replicas
    wait_for(replicas.leader, 30, "one leader")
    issue = f"/v1/cluster/{ready_cluster}/bootstrap-url"
    url = replicas.root(a).post(issue).json()
    own_postgres.stop(keep_data=True)
    try:
        refused = replicas.root(b).post(issue)
        assert refused.status_code == 503, refused.text
        assert refused.headers["Retry-After"] == "5"
        assert "cannot be reached" in refused.json()["error"]
        script = Api("").get(_through(url, a.url))
        assert script.status_code == 503 and script.headers["Retry-After"], script.text
        # neither replica can renew or take the lease: nobody leads, both say why
        wait_for(lambda: replicas.roles() == ["standby", "standby"], 30, "nobody leading")
        code, body = replicas.health(b)
        assert code == 503 and "cannot reach the leader lease" in body["reason"], body
    finally:
        own_postgres.start()
    wait_for(replicas.leader, 30, "a leader again")
    back = Api("").get(_through(url, b.url))  # the URL issued before the outage still works
    assert back.status_code == 200, back.text
    assert replicas.root(a).post(issue).status_code == 200


def test_an_unreachable_database_at_start_is_one_line_without_the_password(
        tmp_path: Path) -> None:
    url = f"postgresql://cm:s3cret-pw@127.0.0.1:{free_port()}/cm"
    done = run_command("fplus.cluster_manager.cli", "serve", "--data-dir", str(tmp_path / "cm"),
                       "--port", str(free_port()), "--git", f"http://127.0.0.1:{free_port()}",
                       "--config-store", f"http://127.0.0.1:{free_port()}",
                       "--database", url)
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "postgresql://cm:***@127.0.0.1:" in lines[0] and "s3cret-pw" not in done.stderr
    assert not (tmp_path / "cm" / "bootstrap-tokens.sqlite").exists()
