"""The Cluster Manager's INFO log: one line per lifecycle event, and no secret in any of it."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
import yaml
from cryptography.hazmat.primitives.asymmetric import rsa

from fplus.cluster_manager.model.apps_and_roles import EDGE_APP
from harness.certs import make_cert
from harness.servers import Api, ServiceProcess, cluster_manager_process, git_server_process
from harness.stack import Stack, status, wait_for

CM = r"INFO fplus\.cluster_manager\."


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """A stack whose Cluster Manager logs at INFO (the harness default is WARNING)."""
    root = tmp_path_factory.mktemp("logs")
    store = ServiceProcess(root / "cs").start()
    git = git_server_process(root / "git", store.url).start()
    manager = cluster_manager_process(root / "cm", store.url, git.url, root / "git" / "repos")
    manager.log_level = "INFO"
    running = Stack(root, store, git, manager.start())
    yield running
    running.stop()


def log_text(stack: Stack) -> str:
    return (stack.root / f"cluster_manager-{stack.manager.port}.log").read_text()


def test_each_lifecycle_event_is_one_info_line_without_secrets(stack: Stack) -> None:
    root = Api(stack.manager.url, stack.admin.auth)
    cluster = root.post("/v1/cluster", json={"name": "logged", "namespace": "ns"}).json()["uuid"]
    wait_for(lambda: (status(stack.admin, cluster) or {}).get("ready"), what="ready")
    url = root.post(f"/v1/cluster/{cluster}/bootstrap-url").json()
    script = Api("").get(url).text
    assert Api("").get(url).status_code == 410
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    stack.admin.put(f"/v2/app/{EDGE_APP}/object/{cluster}", json={"kubeseal_cert": make_cert(key)})
    secret = f"/v1/cluster/{cluster}/secret/ns/db/password"
    assert root.put(secret, data=b"hunter2-very-secret").status_code == 204
    assert root.delete(secret).status_code == 204
    assert root.delete(f"/v1/cluster/{cluster}", params={"force": "true"}).status_code == 202
    wait_for(lambda: status(stack.admin, cluster) is None, what="torn down")

    text = wait_for(lambda: (t := log_text(stack)) and "teardown finished" in t and t,
                    what="the teardown line")
    lines = [line for line in text.splitlines() if cluster in line]
    expected = [  # CM: the Cluster Manager's loggers
        CM + r"services\.clusters\.cluster_api: cluster \S+ \(logged\): created through the API",
        CM + r"reconcile\.commissioning: cluster \S+ \(logged\): commissioned "
        r"at [0-9a-f]{40} in \d+ ms",
        CM + r"_http\.cluster_routes: cluster \S+: bootstrap URL issued",
        CM + r"_http\.cluster_routes: cluster \S+: bootstrap script served",
        CM + r"_http\.cluster_routes: cluster \S+: bootstrap script refused: "
        r"this bootstrap URL has been used already",
        CM + r"services\.secrets\.sealed_secrets: cluster \S+: sealed ns/db key password to "
        r"SHA256:\S+ at "
        r"[0-9a-f]{40}",
        CM + r"services\.secrets\.sealed_secrets: cluster \S+: removed ns/db key password at",
        CM + r"services\.clusters\.cluster_api: cluster \S+: deletion requested \(forced\)",
        CM + r"reconcile\.teardown: cluster \S+ \(logged\): teardown started",
        CM + r"reconcile\.teardown: cluster \S+ \(logged\): teardown finished",
    ]
    for pattern in expected:
        assert any(re.search(pattern, line) for line in lines), (pattern, lines)
    token = url.split("token=")[1]
    passwords = [d["stringData"]["password"] for d in yaml.safe_load_all(
        re.search(r"cat > 'credentials.yaml' <<'(\S+)'\n(.*?)^\1$", script, re.S | re.M)[2])]
    for secret_text in (token, *passwords, "hunter2-very-secret"):
        assert secret_text not in text
    assert "Traceback" not in text

