"""Bootstrap URLs and scripts over HTTP: one-time tokens, credentials rotated at each fetch."""

from __future__ import annotations

import re
import time
import uuid
from pathlib import Path

import pytest
import yaml

from cluster_manager.api.bootstrap_tokens import BootstrapTokens
from cluster_manager.api.errors import Gone, Unauthorized
from harness.servers import Api
from harness.stack import Stack, clone_url, git
from tests.bootstrap.edge import FakeEdge
from tests.cluster_manager.api.conftest import Cluster


def new_url(root: Api, cluster: str) -> str:
    r = root.post(f"/v1/cluster/{cluster}/bootstrap-url")
    assert r.status_code == 200, r.text
    return r.json()


def packed_file(script: str, name: str) -> str:
    """The content of ``name`` as packed into the script (a quoted here-document)."""
    found = re.search(rf"cat > '{re.escape(name)}' <<'(\S+)'\n(.*?)^\1$", script, re.S | re.M)
    assert found, f"{name} not packed in the script"
    return found.group(2)


def credentials(script: str) -> dict[str, tuple[str, str]]:
    docs = yaml.safe_load_all(packed_file(script, "credentials.yaml"))
    return {d["metadata"]["name"]: (d["stringData"]["username"], d["stringData"]["password"])
            for d in docs}


def test_url_is_one_time(stack: Stack, root: Api, bootstrapped: Cluster) -> None:
    url = new_url(root, bootstrapped.uuid)
    assert url.startswith(f"{stack.manager.url}/v1/cluster/{bootstrapped.uuid}/bootstrap?token=")
    first = Api("").get(url)
    assert first.status_code == 200, first.text
    assert first.headers["Content-Type"].startswith("text/plain")
    assert first.headers["Cache-Control"] == "no-store"
    assert first.text.startswith("#!/bin/sh")
    again = Api("").get(url)
    assert again.status_code == 410 and "used" in again.json()["error"]


def test_missing_wrong_and_superseded_tokens(stack: Stack, root: Api,
                                             bootstrapped: Cluster) -> None:
    base = f"{stack.manager.url}/v1/cluster/{bootstrapped.uuid}/bootstrap"
    assert Api("").get(base).status_code == 401
    assert Api("").get(base + "?token=").status_code == 401
    assert Api("").get(base + "?token=guess").status_code == 401
    old = new_url(root, bootstrapped.uuid)
    current = new_url(root, bootstrapped.uuid)
    assert Api("").get(old).status_code == 401  # a new URL invalidates the previous one
    other = f"{stack.manager.url}/v1/cluster/{uuid.uuid4()}/bootstrap?" + current.split("?")[1]
    assert Api("").get(other).status_code == 401  # a token is bound to its cluster
    assert Api("").get(current).status_code == 200


def test_tokens_expire_and_are_stored_hashed(tmp_path: Path) -> None:
    tokens = BootstrapTokens(tmp_path / "t.sqlite", ttl=0.2)
    cluster = str(uuid.uuid4())
    token = tokens.issue(cluster)
    tokens.check(cluster, token)
    time.sleep(0.3)
    with pytest.raises(Gone, match="expired"):
        tokens.redeem(cluster, token)
    fresh = tokens.issue(cluster)
    with pytest.raises(Unauthorized):
        tokens.check(cluster, token)
    tokens.redeem(cluster, fresh)
    with pytest.raises(Gone, match="used"):
        tokens.redeem(cluster, fresh)
    raw = (tmp_path / "t.sqlite").read_bytes() + b"".join(
        p.read_bytes() for p in tmp_path.glob("t.sqlite-*"))
    assert fresh.encode() not in raw and token.encode() not in raw
    reopened = BootstrapTokens(tmp_path / "t.sqlite", ttl=60)  # survives a restart
    with pytest.raises(Gone, match="used"):
        reopened.check(cluster, fresh)


def test_script_carries_fresh_credentials_that_work(stack: Stack, root: Api,
                                                    bootstrapped: Cluster,
                                                    tmp_path: Path) -> None:
    script = Api("").get(new_url(root, bootstrapped.uuid)).text
    creds = credentials(script)
    flux_user, flux_password = creds["flux-secrets"]
    assert flux_user == f"op1flux/{bootstrapped.name}"
    assert creds["edge-sync-credentials"][0] == f"op1sync/{bootstrapped.name}"
    clone = git("clone", "-q", clone_url(stack, flux_user, flux_password, bootstrapped.uuid),
                str(tmp_path / "first"))
    assert clone.returncode == 0, clone.stderr
    sync = Api(stack.store.url, creds["edge-sync-credentials"])
    assert sync.get("/v2/whoami/uuid").status_code == 200
    # the self-link packed into the script is the one in the repo
    assert packed_file(script, "self-link.yaml") == \
        (tmp_path / "first/edo/cluster/self-link.yaml").read_text()

    rerun = credentials(Api("").get(new_url(root, bootstrapped.uuid)).text)
    assert rerun["flux-secrets"][1] != flux_password
    time.sleep(5.5)  # the Git server caches a verified login for up to 5 s
    stale = git("clone", "-q", clone_url(stack, flux_user, flux_password, bootstrapped.uuid),
                str(tmp_path / "stale"))
    assert stale.returncode != 0  # rotated: the previous script's credentials are dead
    assert sync.get("/v2/whoami/uuid").status_code == 401
    fresh = git("clone", "-q", clone_url(stack, flux_user, rerun["flux-secrets"][1],
                                         bootstrapped.uuid), str(tmp_path / "fresh"))
    assert fresh.returncode == 0, fresh.stderr


def test_a_refused_fetch_does_not_use_up_the_token(stack: Stack, root: Api,
                                                             bootstrapped: Cluster) -> None:
    """A token is bound to its cluster; presenting it elsewhere does not spend it."""
    url = new_url(root, bootstrapped.uuid)
    token = url.split("token=")[1]
    assert Api("").get(f"{stack.manager.url}/v1/cluster/{uuid.uuid4()}/bootstrap"
                       f"?token={token}").status_code == 401
    assert Api("").get(url).status_code == 200


def test_served_script_runs_twice_on_an_edge(stack: Stack, root: Api, bootstrapped: Cluster,
                                             tmp_path: Path) -> None:
    """The script as served, run with sh against the recording kubectl of tests/bootstrap:
    the edge ends with the newest fetch's credentials, and those pull the repo."""
    (tmp_path / "edge").mkdir()
    (tmp_path / "cache").mkdir()
    edge = FakeEdge(tmp_path / "edge", tmp_path / "cache")
    first = edge.run(Api("").get(new_url(root, bootstrapped.uuid)).text, "-y")
    assert first.returncode == 0 and first.stdout.splitlines()[-1] == "Done.", first.stderr
    assert ["create", "namespace", "fplus-edge"] in first.argvs
    second_script = Api("").get(new_url(root, bootstrapped.uuid)).text
    second = edge.run(second_script, "-y")
    assert second.returncode == 0, second.stderr
    assert ["create", "namespace", "fplus-edge"] not in second.argvs
    on_edge = edge.secrets("fplus-edge")
    assert {name: (s["username"], s["password"]) for name, s in on_edge.items()} == \
        credentials(second_script)
    user, password = credentials(second_script)["flux-secrets"]
    pulled = git("clone", "-q", clone_url(stack, user, password, bootstrapped.uuid),
                 str(tmp_path / "pulled"))
    assert pulled.returncode == 0, pulled.stderr
