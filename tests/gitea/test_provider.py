"""One suite, two Git providers: our Git server and a real Gitea (``--git-provider gitea``).

The same cluster lifecycle on each: commissioning pushes the rendered repo and the cluster is
Ready; the bootstrap script's Flux credentials pull the cluster's own repo and the shared
ones, no other cluster's, and cannot push; a seal lands a commit and reads back; an
approved new key re-seals in one commit; a new script rotates the credentials (the old ones
stop: ``--rotation-grace 0``); a teardown moves the repo aside, revokes Flux and frees the
name. What only Gitea has (its users, archived repos, refusals) is checked on Gitea.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from cryptography.hazmat.primitives.asymmetric import rsa

from fplus.cluster_manager import sealing
from fplus.cluster_manager.escrow import keyring
from fplus.cluster_manager.model.apps_and_roles import FLUX_SECRET
from fplus.git.hosts.gitea import reader_name
from harness.certs import make_cert
from harness.gitea_stack import start_gitea_stack
from harness.servers import Api
from harness.stack import CONFIG, create_cluster, start_stack, status, wait_for
from tests.cluster_manager.api.conftest import Cluster, report_edge
from tests.cluster_manager.api.test_bootstrap import credentials
from tests.cluster_manager.escrow.conftest import approve, fingerprint, wait_resealed
from tests.gitea.hosts import SHARED_CHARTS, Host, run_git

MANAGER_ARGS = ("--teardown-timeout", "1", "--rotation-grace", "0", "--reseal-interval", "0.5")


@pytest.fixture(scope="module", params=["ours", "gitea"])
def host(request: pytest.FixtureRequest,
         tmp_path_factory: pytest.TempPathFactory) -> Iterator[Host]:
    """A stack on each provider, with secret escrow on (re-seals) for the module."""
    root = tmp_path_factory.mktemp(f"provider-{request.param}")
    keyfile = root / "escrow.key"
    keyring.save(keyfile, keyring.generate(), replace=False)
    extra = (*MANAGER_ARGS, "--secret-escrow", str(keyfile))
    if request.param == "gitea":
        stack = start_gitea_stack(root, request.getfixturevalue("gitea"), *extra)
    else:
        stack = start_stack(root, manager_extra=extra)
    try:
        yield Host(request.param, stack)
    finally:
        stack.stop()


def commission(host: Host, name: str) -> str:
    cluster = create_cluster(host.admin, name)
    wait_for(lambda: (status(host.admin, cluster) or {}).get("ready"), timeout=90,
             what=f"{name} ready on {host.kind}")
    return cluster


def flux_credentials(host: Host, cluster: str) -> tuple[str, str]:
    """Flux's (user, secret) from a freshly fetched bootstrap script."""
    url = host.manager.post(f"/v1/cluster/{cluster}/bootstrap-url")
    assert url.status_code == 200, url.text
    script = Api("").get(url.json())
    assert script.status_code == 200, script.text
    return credentials(script.text)[FLUX_SECRET]


def clones(url: str, into: Path) -> bool:
    done = run_git("clone", "-q", url, into)
    return done.returncode == 0 and (into / "README.md").is_file()


def test_commissioning_pushes_the_rendered_repo(host: Host, tmp_path: Path) -> None:
    cluster = commission(host, "prov-a")
    ready = status(host.admin, cluster)
    assert ready is not None
    assert host.head(cluster, "prov-a") == ready["commit"]
    address = host.repo_address(cluster, "prov-a")
    assert f"url: {address}\n" in ready["self_link"]
    assert clones(host.url(cluster, "prov-a"), tmp_path / "a")
    generated = sorted(p.name for p in (tmp_path / "a" / "edo" / "cluster").iterdir())
    assert "self-link.yaml" in generated and "edge-sync.yaml" in generated
    assert address in (tmp_path / "a" / "edo" / "cluster" / "self-link.yaml").read_text()
    # the shared charts repo is made by the leader, with its README
    assert wait_for(lambda: host.head(SHARED_CHARTS, "helm-charts"), timeout=60,
                    what="the shared charts repo")
    if host.kind == "gitea":
        repo = host.gitea_repo("prov-a")
        assert repo is not None and repo["private"] and repo["default_branch"] == "main"
        assert repo["description"] == f"fplus edge cluster {cluster}"


def test_flux_pulls_its_own_repo_and_the_shared_ones_only_and_cannot_push(
        host: Host, tmp_path: Path) -> None:
    own, other = commission(host, "prov-b"), commission(host, "prov-c")
    user, secret = flux_credentials(host, own)
    if host.kind == "gitea":
        assert user == reader_name(own)
        found = host.gitea.api().get(f"{host.gitea.url}/api/v1/users/{user}", timeout=30)
        assert found.status_code == 200  # the admin sees it; nobody is told its password
    assert clones(host.url(own, "prov-b", user, secret), tmp_path / "own")
    wait_for(lambda: host.head(SHARED_CHARTS, "helm-charts"), timeout=60, what="shared repo")
    assert clones(host.url(SHARED_CHARTS, "helm-charts", user, secret), tmp_path / "charts")
    assert not clones(host.url(other, "prov-c", user, secret), tmp_path / "other")

    before = host.head(own, "prov-b")
    work = tmp_path / "own"
    (work / "by-hand").mkdir()
    (work / "by-hand" / "x.yaml").write_text("kind: ConfigMap\n")
    assert run_git("add", "by-hand", cwd=work).returncode == 0
    assert run_git("commit", "-q", "-m", "flux tries to push", cwd=work).returncode == 0
    pushed = run_git("push", "-q", "origin", "HEAD:refs/heads/main", cwd=work)
    assert pushed.returncode != 0, "Flux's credentials pushed"
    assert host.head(own, "prov-b") == before


def test_a_seal_lands_a_commit_and_reads_back(host: Host, tmp_path: Path) -> None:
    cluster = commission(host, "prov-d")
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    report_edge(host.stack, cluster, kubeseal_cert=make_cert(key))  # type: ignore[arg-type]
    before = host.head(cluster, "prov-d")
    put = host.manager.put(f"/v1/cluster/{cluster}/secret/app/db/password", data=b"s3cret",
                           headers={"Content-Type": "application/octet-stream"})
    assert put.status_code == 204, put.text
    after = host.head(cluster, "prov-d")
    assert after is not None and after != before
    assert clones(host.url(cluster, "prov-d"), tmp_path / "d")
    doc = yaml.safe_load((tmp_path / "d" / "edo" / "secrets" / "app" / "db.yaml").read_text())
    assert sealing.decrypt_value(key, doc["spec"]["encryptedData"]["password"], "strict",
                                 "app", "db") == b"s3cret"
    listed = host.manager.get(f"/v1/cluster/{cluster}/secret")
    assert listed.status_code == 200, listed.text
    assert [(s["namespace"], s["name"], [e["key"] for e in s["sealed"]])
            for s in listed.json()] == [("app", "db", ["password"])]


def test_an_approved_new_key_reseals_in_one_commit(host: Host, tmp_path: Path) -> None:
    name = "prov-e"
    cluster = Cluster(commission(host, name), name,
                      rsa.generate_private_key(public_exponent=65537, key_size=2048))
    report_edge(host.stack, cluster.uuid, kubeseal_cert=make_cert(cluster.key))  # type: ignore[arg-type]
    for key in ("user", "password"):
        put = host.manager.put(f"/v1/cluster/{cluster.uuid}/secret/app/login/{key}",
                               data=key.encode() + b"-value")
        assert put.status_code == 204, put.text
    before = host.head(cluster.uuid, name)
    new_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    report_edge(host.stack, cluster.uuid, kubeseal_cert=make_cert(new_key))  # type: ignore[arg-type]
    approve(host.manager, cluster, new_key)
    assert wait_resealed(host.manager, cluster.uuid, new_key)["sealedTo"] == \
        fingerprint(new_key)
    after = host.head(cluster.uuid, name)
    assert clones(host.url(cluster.uuid, name), tmp_path / name)
    log = run_git("log", "--format=%H", f"{before}..{after}", cwd=tmp_path / name)
    assert len(log.stdout.split()) == 1, log.stdout
    files = tmp_path / name / "edo" / "secrets" / "app" / "login.yaml"
    sealed = yaml.safe_load(files.read_text())["spec"]["encryptedData"]
    assert {k: sealing.decrypt_value(new_key, v, "strict", "app", "login")
            for k, v in sealed.items()} == {"user": b"user-value", "password": b"password-value"}


def test_a_new_script_rotates_flux_credentials(host: Host, tmp_path: Path) -> None:
    cluster = commission(host, "prov-f")
    first = flux_credentials(host, cluster)
    assert clones(host.url(cluster, "prov-f", *first), tmp_path / "first")
    second = flux_credentials(host, cluster)
    assert second != first and second[0] == first[0]
    assert clones(host.url(cluster, "prov-f", *second), tmp_path / "second")
    counter = iter(range(1000))
    wait_for(lambda: not clones(host.url(cluster, "prov-f", *first),
                                tmp_path / f"old-{next(counter)}"),
             timeout=10, what="the superseded credentials refused (grace 0)")


def test_teardown_moves_the_repo_aside_revokes_flux_and_frees_the_name(
        host: Host, tmp_path: Path) -> None:
    cluster = commission(host, "prov-g")
    flux = flux_credentials(host, cluster)
    last = host.head(cluster, "prov-g")
    assert host.admin.delete(f"/v2/app/{CONFIG}/object/{cluster}").status_code == 204
    wait_for(lambda: status(host.admin, cluster) is None, timeout=90, what="the teardown")
    assert not clones(host.url(cluster, "prov-g", *flux), tmp_path / "revoked")
    if host.kind == "gitea":
        assert host.gitea_repo("prov-g") is None
        archived = host.gitea_repo(f"prov-g-archived-{cluster[:8]}")
        assert archived is not None and archived["archived"] is True
        moved = host.url(cluster, f"prov-g-archived-{cluster[:8]}")
        assert run_git("ls-remote", moved, "refs/heads/main").stdout.split()[0] != last
        gone = host.gitea.api().get(f"{host.gitea.url}/api/v1/users/{reader_name(cluster)}",
                                    timeout=30)
        assert gone.status_code == 404
    else:
        assert list((host.stack.root / "git" / "archive").iterdir())
    again = commission(host, "prov-g")  # the name is free again: a new, empty repo
    assert again != cluster
    assert host.head(again, "prov-g") == (status(host.admin, again) or {}).get("commit")

