"""Bootstrap URLs and scripts over HTTP: one-time tokens, credentials rotated at each fetch."""

from __future__ import annotations

import hashlib
import re
import sqlite3
import time
import uuid
from pathlib import Path

import pytest
import requests
import yaml

from fplus.cluster_manager.model.apps_and_roles import STATUS_APP as STATUS
from fplus.cluster_manager.services.bootstrap.tokens import BootstrapTokens
from fplus.cluster_manager.services.errors import Gone, Unauthorized
from fplus.config_store import uuids
from harness.servers import Api
from harness.stack import Stack, clone_url, git, wait_for
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


JSON = {"Accept": "application/json"}
"""What a JSON client asks (a shell client gets refusals as a script: test_handoff)."""


def test_url_is_one_time(stack: Stack, root: Api, bootstrapped: Cluster) -> None:
    url = new_url(root, bootstrapped.uuid)
    assert url.startswith(f"{stack.manager.url}/v1/cluster/{bootstrapped.uuid}/bootstrap?token=")
    first = Api("").get(url)
    assert first.status_code == 200, first.text
    assert first.headers["Content-Type"].startswith("text/plain")
    assert first.headers["Cache-Control"] == "no-store"
    assert first.text.startswith("#!/bin/sh")
    again = Api("").get(url, headers=JSON)
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
    tokens = BootstrapTokens(tmp_path / "t.sqlite", ttl=2.0)  # 0.2 ran out on a loaded machine
    cluster = str(uuid.uuid4())
    token = tokens.issue(cluster)
    tokens.check(cluster, token)
    time.sleep(2.1)
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


def test_a_token_file_from_before_the_cm_prefix_keeps_its_tokens(tmp_path: Path) -> None:
    """Files made when the table was ``bootstrap_tokens`` are renamed at start, tokens kept."""
    path, cluster, token = tmp_path / "old.sqlite", str(uuid.uuid4()), "an-old-token"
    with sqlite3.connect(path) as old:
        old.execute("CREATE TABLE bootstrap_tokens (cluster TEXT PRIMARY KEY, digest TEXT "
                    "NOT NULL, expires REAL NOT NULL, used INTEGER NOT NULL DEFAULT 0)")
        old.execute("INSERT INTO bootstrap_tokens VALUES (?, ?, ?, 0)",
                    (cluster, hashlib.sha256(token.encode()).hexdigest(), time.time() + 60))
    old.close()
    tokens = BootstrapTokens(path)
    tokens.redeem(cluster, token)
    with pytest.raises(Gone, match="used"):
        tokens.check(cluster, token)


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
    # fetching a script cuts nobody off: the running edge's passwords still work ...
    still = git("clone", "-q", clone_url(stack, flux_user, flux_password, bootstrapped.uuid),
                str(tmp_path / "still"))
    assert still.returncode == 0, still.stderr
    assert Api(stack.store.url, creds["edge-sync-credentials"]).get(
        "/v2/whoami/uuid").status_code == 200
    # ... until the new ones are used
    fresh = git("clone", "-q", clone_url(stack, flux_user, rerun["flux-secrets"][1],
                                         bootstrapped.uuid), str(tmp_path / "fresh"))
    assert fresh.returncode == 0, fresh.stderr
    assert Api(stack.store.url, rerun["edge-sync-credentials"]).get(
        "/v2/whoami/uuid").status_code == 200
    time.sleep(5.5)  # the Git server caches a verified login for up to 5 s
    stale = git("clone", "-q", clone_url(stack, flux_user, flux_password, bootstrapped.uuid),
                str(tmp_path / "stale"))
    assert stale.returncode != 0  # retired once the new password was used
    assert Api(stack.store.url, creds["edge-sync-credentials"]).get(
        "/v2/whoami/uuid").status_code == 401


def test_a_refused_fetch_does_not_use_up_the_token(stack: Stack, root: Api,
                                                             bootstrapped: Cluster) -> None:
    """A token is bound to its cluster; presenting it elsewhere does not spend it."""
    url = new_url(root, bootstrapped.uuid)
    token = url.split("token=")[1]
    assert Api("").get(f"{stack.manager.url}/v1/cluster/{uuid.uuid4()}/bootstrap"
                       f"?token={token}").status_code == 401
    assert Api("").get(url).status_code == 200


def test_head_checks_the_url_without_using_it_or_rotating(stack: Stack, root: Api,
                                                          bootstrapped: Cluster) -> None:
    url = new_url(root, bootstrapped.uuid)
    before = stack.admin.get(f"/v2/app/{STATUS}/object/{bootstrapped.uuid}").json()
    for _ in range(3):
        head = Api("").head(url)
        assert head.status_code == 200 and head.text == ""
        assert head.headers["Cache-Control"] == "no-store"
    assert Api("").head(url.replace("token=", "token=x")).status_code == 401
    script = Api("").get(url)  # still unused
    assert script.status_code == 200 and script.text.startswith("#!/bin/sh")
    after = stack.admin.get(f"/v2/app/{STATUS}/object/{bootstrapped.uuid}").json()
    assert after["flux"] == before["flux"]


def test_a_template_that_fails_rotates_nothing_and_leaves_the_url_usable(
        stack: Stack, root: Api, bootstrapped: Cluster) -> None:
    entry = f"/v2/app/{uuids.App.BootstrapScript}/object/{uuids.App.BootstrapScript}"
    template = stack.admin.get(entry).json()
    working = credentials(Api("").get(new_url(root, bootstrapped.uuid)).text)
    broken = {**template, "wrapper": "#!/bin/sh\necho no files here\n"}  # no {{files}} line
    r = stack.admin.put(entry, json=broken)
    assert r.status_code in (200, 201, 204), r.text

    def refused_url() -> tuple[str, requests.Response] | None:
        """A new URL fetched: refused once the broken template is in use (it is followed
        through notify, so it applies within the notify delay); until then the script is
        served, with the credentials that must then survive the refusal."""
        nonlocal working
        url = new_url(root, bootstrapped.uuid)
        r = Api("").get(url, headers=JSON)
        if r.status_code == 200:
            working = credentials(r.text)
        return (url, r) if r.status_code == 503 else None

    try:
        url, refused = wait_for(refused_url, 30, "the broken template in use")
        assert "unusable" in refused.json()["error"]
        sync = Api(stack.store.url, working["edge-sync-credentials"])
        assert sync.get("/v2/whoami/uuid").status_code == 200  # nothing rotated
    finally:
        stack.admin.put(entry, json=template)
    # the URL was not used up: it serves once the working template is back
    wait_for(lambda: Api("").get(url).status_code == 200, 10, "the script")
