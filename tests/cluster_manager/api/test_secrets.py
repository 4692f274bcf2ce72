"""Sealing over HTTP: PUT/DELETE one key, list, and every refusal leaves the repo untouched."""

from __future__ import annotations

import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import yaml
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from fplus.cluster_manager import sealing
from fplus.config_store import uuids
from harness.certs import make_cert
from harness.gitcli import bare, fsck_clean, git, push_from_clone
from harness.servers import ADMIN_PASSWORD, Api, ThreadSessions
from harness.stack import Stack
from tests.cluster_manager.api.conftest import Cluster, commission, report_edge


def secret_url(cluster: str, ns: str = "app", name: str = "creds", key: str = "password") -> str:
    return f"/v1/cluster/{cluster}/secret/{ns}/{name}/{key}"


def repo(stack: Stack, cluster: str) -> Path:
    return stack.repos / f"{cluster}.git"


def head(stack: Stack, cluster: str) -> str:
    return bare(repo(stack, cluster), "rev-parse", "main").strip()


def sealed_doc(stack: Stack, cluster: str, ns: str, name: str) -> dict | None:
    out = bare(repo(stack, cluster), "show", f"main:edo/secrets/{ns}/{name}.yaml", check=False)
    return yaml.safe_load(out) if out.startswith("apiVersion") else None


def opens(cluster: Cluster, doc: dict, key: str, scope: str = "strict") -> bytes:
    meta = doc["metadata"]
    return sealing.decrypt_value(cluster.key, doc["spec"]["encryptedData"][key], scope,
                                 meta["namespace"], meta["name"])


def test_put_seals_and_commits(stack: Stack, root: Api, bootstrapped: Cluster) -> None:
    value = b"s3cr\xffet\n"
    r = root.put(secret_url(bootstrapped.uuid, name="put-one"), data=value,
                 headers={"Content-Type": "application/octet-stream"})
    assert r.status_code == 204, r.text
    doc = sealed_doc(stack, bootstrapped.uuid, "app", "put-one")
    assert doc is not None
    assert doc["kind"] == "SealedSecret" and doc["apiVersion"] == "bitnami.com/v1alpha1"
    assert doc["metadata"] == {"name": "put-one", "namespace": "app"}
    assert doc["spec"]["template"]["metadata"] == {"name": "put-one", "namespace": "app"}
    assert opens(bootstrapped, doc, "password") == value
    message = bare(repo(stack, bootstrapped.uuid), "log", "-1", "--format=%s").strip()
    assert message == "Updated sealed secret app/put-one/password"
    assert "s3cr" not in bare(repo(stack, bootstrapped.uuid), "show", "main")


@pytest.mark.parametrize(("scope", "annotation"), [
    ("namespace-wide", "sealedsecrets.bitnami.com/namespace-wide"),
    ("cluster-wide", "sealedsecrets.bitnami.com/cluster-wide"),
])
def test_scopes(stack: Stack, root: Api, bootstrapped: Cluster, scope: str,
                annotation: str) -> None:
    name = f"scoped-{scope}"
    assert root.put(secret_url(bootstrapped.uuid, name=name) + f"?scope={scope}",
                    data=b"v").status_code == 204
    doc = sealed_doc(stack, bootstrapped.uuid, "app", name)
    assert doc["metadata"]["annotations"] == {annotation: "true"}
    assert opens(bootstrapped, doc, "password", scope) == b"v"
    with pytest.raises(sealing.DecryptionError):
        opens(bootstrapped, doc, "password", "strict")
    # another key sealed strict cannot join a secret sealed in another scope
    r = root.put(secret_url(bootstrapped.uuid, name=name, key="other"), data=b"w")
    assert r.status_code == 409, r.text


def test_dryrun_writes_nothing(stack: Stack, root: Api, bootstrapped: Cluster) -> None:
    assert root.put(secret_url(bootstrapped.uuid, name="dry-held"), data=b"v").status_code == 204
    before = head(stack, bootstrapped.uuid)
    for query in ("?dryrun", "?dryrun=true", "?dryrun=false"):  # presence counts, as ACS
        assert root.put(secret_url(bootstrapped.uuid, name="dry") + query,
                        data=b"").status_code == 204
        assert root.delete(secret_url(bootstrapped.uuid, name="dry-held") + query
                           ).status_code == 204
        r = root.delete(secret_url(bootstrapped.uuid, name="dry") + query)  # never sealed
        assert r.status_code == 404 and "no sealed secret app/dry" in r.json()["error"]
    assert head(stack, bootstrapped.uuid) == before


def test_delete_key_then_file(stack: Stack, root: Api, bootstrapped: Cluster) -> None:
    for key in ("a", "b"):
        assert root.put(secret_url(bootstrapped.uuid, name="del", key=key),
                        data=key.encode()).status_code == 204
    assert root.delete(secret_url(bootstrapped.uuid, name="del", key="a")).status_code == 204
    doc = sealed_doc(stack, bootstrapped.uuid, "app", "del")
    assert list(doc["spec"]["encryptedData"]) == ["b"]
    assert opens(bootstrapped, doc, "b") == b"b"
    assert root.delete(secret_url(bootstrapped.uuid, name="del", key="b")).status_code == 204
    assert sealed_doc(stack, bootstrapped.uuid, "app", "del") is None
    before = head(stack, bootstrapped.uuid)
    r = root.delete(secret_url(bootstrapped.uuid, name="del", key="b"))
    assert r.status_code == 404, r.text  # nothing to delete: said so, and no commit
    assert r.json()["error"] == "no sealed secret app/del in the cluster's repo: nothing removed"
    assert root.put(secret_url(bootstrapped.uuid, name="del", key="c"), data=b"c"
                    ).status_code == 204
    before = head(stack, bootstrapped.uuid)
    r = root.delete(secret_url(bootstrapped.uuid, name="del", key="gone"))
    assert r.status_code == 404, r.text
    assert r.json()["error"] == "sealed secret app/del has no key gone: nothing removed"
    assert head(stack, bootstrapped.uuid) == before
    assert list(sealed_doc(stack, bootstrapped.uuid, "app", "del")["spec"]["encryptedData"]) \
        == ["c"]


def test_listing_shows_names_and_keys_never_values(root: Api, bootstrapped: Cluster) -> None:
    for key in ("user", "pass"):
        assert root.put(secret_url(bootstrapped.uuid, ns="listing", name="db", key=key),
                        data=b"hunter2").status_code == 204
    listing = root.get(f"/v1/cluster/{bootstrapped.uuid}/secret").json()
    [mine] = [s for s in listing if s.get("namespace") == "listing"]
    sealed = mine.pop("sealed")
    assert mine == {"namespace": "listing", "name": "db", "scope": "strict",
                    "keys": ["pass", "user"], "unsealed": "unknown"}  # no Flux report yet
    assert [k["key"] for k in sealed] == ["pass", "user"]
    for key in sealed:  # recorded by whom, to which key; this stack keeps no values
        assert uuids.is_uuid(key["sealedBy"])
        assert key["certFingerprint"].startswith("SHA256:") and not key["escrowed"]
        assert key["sealedAt"] > 0 and not key["needsRepost"]
    assert "hunter2" not in str(listing)


@pytest.mark.parametrize(("path", "content"), [
    ("edo/secrets/odd/list.yaml", "- not\n- a mapping\n"),
    ("edo/secrets/odd/nometa.yaml", "apiVersion: bitnami.com/v1alpha1\nkind: SealedSecret\n"
                                    "metadata: 3\nspec: {encryptedData: {}}\n"),
    ("edo/secrets/odd/noname.yaml", "apiVersion: bitnami.com/v1alpha1\nkind: SealedSecret\n"
                                    "metadata: {namespace: [x]}\nspec: {encryptedData: {}}\n"),
    ("edo/secrets/odd/empty.yaml", ""),
])
def test_listing_reports_files_it_cannot_read(stack: Stack, root: Api, bootstrapped: Cluster,
                                              tmp_path: Path, path: str, content: str) -> None:
    """A file pushed by hand that is no SealedSecret is listed as an error, not a 500."""
    url = (f"http://admin:{ADMIN_PASSWORD}@127.0.0.1:{stack.git.port}"
           f"/uuid/{bootstrapped.uuid}")
    push_from_clone(url, tmp_path / "work", path, content)
    r = root.get(f"/v1/cluster/{bootstrapped.uuid}/secret")
    assert r.status_code == 200, r.text
    bad = [entry for entry in r.json() if entry.get("path") == path]
    assert len(bad) == 1 and bad[0]["error"], r.json()
    assert all(set(e) in ({"path", "error"},
                          {"namespace", "name", "scope", "keys", "unsealed", "sealed"})
               for e in r.json())
    git("rm", "-q", path, cwd=tmp_path / "work")
    git("commit", "-qm", "tidy", cwd=tmp_path / "work")
    git("push", "-q", "origin", "HEAD:main", cwd=tmp_path / "work")


def test_64_concurrent_puts_to_one_secret_all_land(stack: Stack, bootstrapped: Cluster) -> None:
    sessions = ThreadSessions(stack.manager.url)
    keys = [f"key-{i:02d}" for i in range(64)]

    def put(key: str) -> int:
        return sessions.api.put(secret_url(bootstrapped.uuid, name="many", key=key),
                                data=key.encode()).status_code

    try:
        with ThreadPoolExecutor(16) as pool:
            assert set(pool.map(put, keys)) == {204}
    finally:
        sessions.close()
    doc = sealed_doc(stack, bootstrapped.uuid, "app", "many")
    assert sorted(doc["spec"]["encryptedData"]) == keys
    assert all(opens(bootstrapped, doc, k) == k.encode() for k in keys)
    fsck_clean(repo(stack, bootstrapped.uuid))


@pytest.mark.parametrize(("ns", "name", "key", "query"), [
    ("Bad_NS", "creds", "k", ""),
    ("x..y", "creds", "k", ""),
    ("a" * 64, "creds", "k", ""),
    ("app", "UPPER", "k", ""),
    ("app", "a..b", "k", ""),
    ("app", "-lead", "k", ""),
    ("app", "creds", "sp ace", ""),
    ("app", "creds", "semi;colon", ""),
    ("app", "creds", "k", "?scope=bogus"),
    ("app", "creds", "k", "?dryun=1"),  # a mistyped dryrun must not write
])
def test_bad_input_is_400_and_nothing_written(stack: Stack, root: Api, bootstrapped: Cluster,
                                              ns: str, name: str, key: str, query: str) -> None:
    before = head(stack, bootstrapped.uuid)
    r = root.put(secret_url(bootstrapped.uuid, ns, name, key) + query, data=b"v")
    assert r.status_code == 400, r.text
    assert r.json()["error"]
    assert root.delete(secret_url(bootstrapped.uuid, ns, name, key) + query).status_code in \
        ((400, 404) if query else (400,))
    assert head(stack, bootstrapped.uuid) == before


@pytest.mark.parametrize(("ns", "key"), [("app", "..%2F..%2Fescape"), ("..", "k"),
                                         ("%2E%2E", "k")])
def test_dot_segments_and_slashes_find_no_route(stack: Stack, root: Api, bootstrapped: Cluster,
                                                ns: str, key: str) -> None:
    before = head(stack, bootstrapped.uuid)
    r = root.put(secret_url(bootstrapped.uuid, ns=ns, key=key), data=b"v")
    assert r.status_code in (400, 404), r.text
    assert head(stack, bootstrapped.uuid) == before


def test_oversized_body_is_413(stack: Stack, root: Api, bootstrapped: Cluster) -> None:
    before = head(stack, bootstrapped.uuid)
    r = root.put(secret_url(bootstrapped.uuid, name="big"), data=b"x" * (1024 * 1024 + 1))
    assert r.status_code == 413
    assert root.put(secret_url(bootstrapped.uuid, name="big"),
                    data=b"x" * (1024 * 1024)).status_code == 204
    assert head(stack, bootstrapped.uuid) != before


def test_unknown_and_unbootstrapped_clusters(stack: Stack, root: Api) -> None:
    assert root.put(secret_url(str(uuid.uuid4())), data=b"v").status_code == 404
    cluster = commission(stack, "no-edge-yet")
    before = head(stack, cluster)
    r = root.put(secret_url(cluster), data=b"v")
    assert r.status_code == 404 and "bootstrapped" in r.json()["error"]
    assert root.delete(secret_url(cluster)).status_code == 404
    report_edge(stack, cluster, hosts=[])
    r = root.put(secret_url(cluster), data=b"v")
    assert r.status_code == 503 and r.headers["Retry-After"]
    assert head(stack, cluster) == before


def _expired(key: rsa.RSAPrivateKey) -> str:
    start = datetime.now(UTC) - timedelta(days=400)
    return make_cert(key, start, start + timedelta(days=30))


@pytest.mark.parametrize(("what", "cert"), [
    ("expired", lambda: _expired(rsa.generate_private_key(public_exponent=65537,
                                                          key_size=2048))),
    ("not RSA", lambda: make_cert(ec.generate_private_key(ec.SECP256R1()))),
    ("garbage", lambda: "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"),
])
def test_unusable_certificate_is_422(stack: Stack, root: Api, what: str, cert) -> None:
    cluster = commission(stack, f"cert-{what.replace(' ', '-').lower()}")
    report_edge(stack, cluster, kubeseal_cert=cert())
    before = head(stack, cluster)
    r = root.put(secret_url(cluster), data=b"v")
    assert r.status_code == 422, r.text
    assert "certificate" in r.json()["error"]
    assert head(stack, cluster) == before
