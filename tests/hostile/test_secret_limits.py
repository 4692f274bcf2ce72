"""Sealed secrets that Kubernetes could not store are refused before anything is committed.

The probe sealed three 1 MB keys into one 3.7 MB SealedSecret: past etcd's 1.5 MiB request
limit and Kubernetes' 1 MiB per Secret, so it failed on the edge, not here. Now each value,
each Secret's values together (unsealed and sealed) and its number of keys have limits
(:mod:`fplus.cluster_manager.services.secrets.limits`); over one answers 413/422 naming it, the repo
does not move, and ``fplus secret seal`` says so in one line.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml
from cryptography.hazmat.primitives.asymmetric import rsa

from harness.certs import make_cert
from harness.gitcli import bare
from harness.servers import Api, plain_env
from harness.stack import Stack
from tests.cluster_manager.api.conftest import commission, report_edge
from tests.cluster_manager.api.test_secrets import head, repo, secret_url
from tests.fplus_cli.test_journey import fplus

MiB = 1024 * 1024


@pytest.fixture(scope="module")
def stack(shared_stack: Stack) -> Stack:
    """The session's stack: these tests only add and look at objects of their own."""
    return shared_stack


@pytest.fixture(scope="module")
def cluster(stack: Stack) -> str:
    """A ready cluster whose edge reported a 4096-bit sealing certificate (the largest
    sealed values)."""
    made = commission(stack, "limits-edge")
    key = rsa.generate_private_key(public_exponent=65537, key_size=4096)
    report_edge(stack, made, kubeseal_cert=make_cert(key))
    return made


@pytest.fixture(scope="module")
def root(stack: Stack) -> Api:
    return Api(stack.manager.url, stack.admin.auth)


def _keys(stack: Stack, cluster: str, name: str) -> list[str]:
    shown = bare(repo(stack, cluster), "show", f"main:edo/secrets/app/{name}.yaml",
                 check=False)
    return sorted((yaml.safe_load(shown) or {}).get("spec", {}).get("encryptedData", {}))


def test_three_big_keys_do_not_make_one_secret(stack: Stack, root: Api, cluster: str) -> None:
    """The probe's attack: the first key fits, the second would take the Secret past the
    1 MiB Kubernetes keeps in one Secret."""
    first = root.put(secret_url(cluster, name="big", key="a"), data=os.urandom(700 * 1024))
    assert first.status_code == 204, first.text
    before = head(stack, cluster)
    second = root.put(secret_url(cluster, name="big", key="b"), data=os.urandom(700 * 1024))
    assert second.status_code == 413, second.text
    message = second.json()["error"]
    assert "app/big" in message and "SECRET_DATA_BYTES" in message and str(MiB) in message
    assert head(stack, cluster) == before and _keys(stack, cluster, "big") == ["a"]
    # the key there can still be replaced by something smaller
    assert root.put(secret_url(cluster, name="big", key="a"),
                    data=b"small").status_code == 204


def test_keys_per_secret(stack: Stack, root: Api, cluster: str) -> None:
    for index in range(100):
        r = root.put(secret_url(cluster, name="many", key=f"k{index}"), data=b"v")
        assert r.status_code == 204, (index, r.text)
    before = head(stack, cluster)
    r = root.put(secret_url(cluster, name="many", key="k100"), data=b"v")
    assert r.status_code == 422, r.text
    assert "at most 100" in r.json()["error"] and "SECRET_KEYS" in r.json()["error"]
    assert head(stack, cluster) == before and len(_keys(stack, cluster, "many")) == 100
    assert root.put(secret_url(cluster, name="many", key="k5"),  # an existing key: fine
                    data=b"w").status_code == 204


def test_fplus_reports_the_limit_in_one_line(stack: Stack, cluster: str,
                                             tmp_path: Path) -> None:
    env = plain_env() | {
        "XDG_CONFIG_HOME": str(tmp_path / "config"), "FPLUS_URL": stack.manager.url,
        "FPLUS_USER": "admin", "FPLUS_PASSWORD": stack.admin.auth[1],
        "CONFIG_STORE_URL": stack.store.url}
    value = tmp_path / "value"
    value.write_bytes(os.urandom(600 * 1024))
    fplus(env, "secret", "seal", cluster, "app/cli", "one", "--from-file", str(value))
    before = head(stack, cluster)
    over = fplus(env, "secret", "seal", cluster, "app/cli", "two", "--from-file", str(value),
                 expect=1)
    assert over.stdout == "" and len(over.stderr.splitlines()) == 1, over.stderr
    assert over.stderr.startswith("fplus: ") and "SECRET_DATA_BYTES" in over.stderr
    assert head(stack, cluster) == before
