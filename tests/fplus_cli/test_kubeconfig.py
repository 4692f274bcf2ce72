"""``fplus cluster kubeconfig`` and ``fplus kube-credential``: the kubeconfig's builder on its
own, then the real ``fplus`` (its console script, in child processes) against a real stack:
the kubeconfig's server is the Cluster Manager's proxy for the cluster, it carries the private
CA fplus uses, its user is the exec plugin (this ``fplus`` by its absolute path, with the
session file in use); ``-o FILE`` writes it 0600; an unknown cluster is refused; the
credential's token is one the Cluster Manager accepts and ends before the session does; not
logged in, or a session ended: a message and exit 1, which kubectl shows."""

from __future__ import annotations

import base64
import json
import ssl
import stat
import subprocess
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import requests
import yaml

from fplus.cli import kubeconfig, session
from fplus.cli.profile import Profile, save
from fplus.serving.http.local_ca import ensure_certificates
from harness.servers import ADMIN_PASSWORD
from harness.stack import Stack, create_cluster
from tests.fplus_cli.test_journey import FPLUS, fplus, login
from tests.toolchain import tool

EXEC = "client.authentication.k8s.io/v1"


@pytest.fixture(scope="module")
def stack(shared_stack: Stack) -> Stack:
    """The session's stack: these tests only add a cluster of their own."""
    return shared_stack


@pytest.fixture(scope="module")
def cluster(stack: Stack) -> str:
    return create_cluster(stack.admin, "kubeconfig-edge")


# -- the builder ------------------------------------------------------------------------------


def test_the_kubeconfig_names_the_proxy_the_ca_and_the_plugin() -> None:
    built = kubeconfig.build("line-2", "https://cm.example/v1/cluster/c1/kube", b"PEM\n",
                             "/opt/fplus/bin/fplus", {"FPLUS_CONFIG": "/home/o/fplus.json"})
    parsed = yaml.safe_load(yaml.safe_dump(built, sort_keys=False))
    assert parsed["apiVersion"] == "v1" and parsed["kind"] == "Config"
    assert parsed["current-context"] == "line-2"
    [entry] = parsed["clusters"]
    assert entry == {"name": "line-2", "cluster": {
        "server": "https://cm.example/v1/cluster/c1/kube",
        "certificate-authority-data": base64.b64encode(b"PEM\n").decode()}}
    [user] = parsed["users"]
    [context] = parsed["contexts"]
    assert context == {"name": "line-2", "context": {"cluster": "line-2", "user": user["name"]}}
    plugin = user["user"]["exec"]
    assert set(user["user"]) == {"exec"}  # no token, no password, no certificate
    assert plugin["apiVersion"] == EXEC and plugin["command"] == "/opt/fplus/bin/fplus"
    assert plugin["args"] == ["kube-credential"]
    assert plugin["env"] == [{"name": "FPLUS_CONFIG", "value": "/home/o/fplus.json"}]
    assert plugin["interactiveMode"] == "Never" and plugin["provideClusterInfo"] is False


def test_without_a_private_ca_or_another_session_file_neither_is_named() -> None:
    built = kubeconfig.build("e", "http://cm:8700/v1/cluster/c/kube", None, "fplus")
    [entry], [user] = built["clusters"], built["users"]
    assert entry["cluster"] == {"server": "http://cm:8700/v1/cluster/c/kube"}
    assert "env" not in user["user"]["exec"]


def test_the_plugin_is_this_fplus_by_its_absolute_path(tmp_path: Path) -> None:
    assert kubeconfig.executable(FPLUS) == str(Path(FPLUS).absolute())
    assert kubeconfig.executable(str(tmp_path / "not-there")) in (
        "fplus", str(Path(FPLUS).absolute()))  # else the first fplus on PATH, else "fplus"
    assert kubeconfig.profile_env({"HOME": str(tmp_path)}) == {}
    assert kubeconfig.profile_env({"XDG_CONFIG_HOME": str(tmp_path)}) == {
        "FPLUS_CONFIG": str(tmp_path / "fplus" / "config.json")}


def test_a_saved_token_is_handed_out_until_shortly_before_it_ends(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("FPLUS_TOKEN", "FPLUS_PASSWORD", "FPLUS_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    now = datetime(2030, 1, 1, tzinfo=UTC)
    save(Profile(token="saved", expires="2030-01-01T03:00:00Z"))
    assert session.credential(now) == ("saved", now + timedelta(hours=3) - session.ENDS_EARLY)
    with pytest.raises(session.ApiError, match="ended at 2030-01-01T03:00:00Z: run `fplus"):
        session.credential(now + timedelta(hours=3) - timedelta(seconds=60))
    monkeypatch.setenv("FPLUS_TOKEN", "given")  # its end is unknown: kubectl keeps it
    assert session.credential(now + timedelta(days=1)) == ("given", None)


# -- the real command against a real stack ----------------------------------------------------


def test_kubeconfig_points_kubectl_at_the_proxy_with_the_plugin(
        stack: Stack, cluster: str, home: dict[str, str], tmp_path: Path) -> None:
    login(stack, home)
    printed = fplus(home, "cluster", "kubeconfig", "kubeconfig-edge")
    assert ("fplus: note: the tunnel of kubeconfig-edge is down (its edge never connected): "
            "kubectl is answered 503") in printed.stderr  # its edge never ran
    shown = yaml.safe_load(printed.stdout)
    [entry], [user] = shown["clusters"], shown["users"]
    assert entry["cluster"] == {"server": f"{stack.manager.url}/v1/cluster/{cluster}/kube"}
    assert shown["current-context"] == "kubeconfig-edge" == entry["name"]
    plugin = user["user"]["exec"]
    assert plugin["command"] == str(Path(FPLUS).absolute())
    assert plugin["args"] == ["kube-credential"]
    assert plugin["env"] == [{"name": "FPLUS_CONFIG",
                              "value": str(tmp_path / "config" / "fplus" / "config.json")}]
    assert json.loads((tmp_path / "config" / "fplus" / "config.json").read_text())[
        "token"] not in json.dumps(shown)
    assert yaml.safe_load(fplus(home, "cluster", "kubeconfig", cluster).stdout) == shown

    ca = tmp_path / "ca.pem"
    ca.write_bytes(b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
    with_ca = yaml.safe_load(fplus(home | {"FPLUS_CA_FILE": str(ca)}, "cluster",
                                   "kubeconfig", "kubeconfig-edge").stdout)
    assert with_ca["clusters"][0]["cluster"]["certificate-authority-data"] == (
        base64.b64encode(ca.read_bytes()).decode())

    out = tmp_path / "edge.kubeconfig"
    out.write_text("old")
    out.chmod(0o644)
    wrote = fplus(home, "cluster", "kubeconfig", "kubeconfig-edge", "-o", str(out))
    assert wrote.stdout == "" and f"wrote {out}" in wrote.stderr
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    assert yaml.safe_load(out.read_text()) == shown

    unknown = fplus(home, "cluster", "kubeconfig", "no-such-edge", expect=1)
    assert unknown.stderr.strip() == ("fplus: no cluster named no-such-edge: `fplus cluster "
                                     "list` shows what there is") and unknown.stdout == ""


def _accepted(stack: Stack, cluster: str, credential: dict[str, object]) -> None:
    """The credential's token opens the cluster's own route on the Cluster Manager."""
    token = credential["status"]["token"]
    r = requests.get(f"{stack.manager.url}/v1/cluster/{cluster}",
                     headers={"Authorization": f"Bearer {token}"}, timeout=10)
    assert r.status_code == 200 and r.json()["uuid"] == cluster, r.text


def test_kube_credential_hands_out_a_token_the_manager_accepts(
        stack: Stack, cluster: str, home: dict[str, str], tmp_path: Path) -> None:
    not_in = fplus(home, "kube-credential", expect=1)
    assert not_in.stdout == "" and not_in.stderr.startswith("fplus: not logged in: run `fplus")

    login(stack, home)
    saved = tmp_path / "config" / "fplus" / "config.json"
    ends = datetime.fromisoformat(json.loads(saved.read_text())["expires"])
    done = fplus(home, "kube-credential")
    credential = json.loads(done.stdout)
    assert credential["apiVersion"] == EXEC and credential["kind"] == "ExecCredential"
    assert credential["status"]["token"] == json.loads(saved.read_text())["token"]
    until = datetime.fromisoformat(credential["status"]["expirationTimestamp"])
    assert until == ends - session.ENDS_EARLY and until > datetime.now(UTC)
    assert credential["status"]["token"] not in done.stderr
    _accepted(stack, cluster, credential)
    asked = json.dumps({"apiVersion": "client.authentication.k8s.io/v1beta1",
                        "kind": "ExecCredential", "spec": {"interactive": False}})
    assert json.loads(fplus(home | {"KUBERNETES_EXEC_INFO": asked}, "kube-credential")
                      .stdout)["apiVersion"] == "client.authentication.k8s.io/v1beta1"

    over = {**json.loads(saved.read_text()), "expires": "2001-01-01T00:00:00Z"}
    saved.write_text(json.dumps(over))
    ended = fplus(home, "kube-credential", expect=1)
    assert ended.stdout == "" and "ended at 2001-01-01T00:00:00Z: run `fplus login` again" in (
        ended.stderr)

    fresh = home | {"FPLUS_URL": stack.manager.url, "CONFIG_STORE_URL": stack.store.url,
                    "FPLUS_USER": "admin", "FPLUS_PASSWORD": ADMIN_PASSWORD,
                    "XDG_CONFIG_HOME": str(tmp_path / "none")}
    minted = json.loads(fplus(fresh, "kube-credential").stdout)
    assert minted["status"]["expirationTimestamp"] and minted["status"]["token"] != over[
        "token"]
    _accepted(stack, cluster, minted)


class _Recorder(BaseHTTPRequestHandler):
    """An HTTPS stand-in for the proxy: records each request's path and Authorization and
    answers ``/version`` as a kube-apiserver would."""

    seen: list[tuple[str, str | None]] = []

    def do_GET(self) -> None:
        self.seen.append((self.path, self.headers.get("Authorization")))
        body = json.dumps({"major": "1", "minor": "36", "gitVersion": "v1.36.0"}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: object) -> None:
        """Quiet."""


@pytest.fixture
def recorder(tmp_path: Path) -> Iterator[tuple[str, Path, list[tuple[str, str | None]]]]:
    """``(https origin, its CA file, what it saw)``: a server of a local CA's making."""
    made = ensure_certificates(tmp_path / "tls", ["127.0.0.1"])
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(made.cert, made.key)
    seen: list[tuple[str, str | None]] = []
    handler = type("Recorder", (_Recorder,), {"seen": seen})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"https://127.0.0.1:{server.server_address[1]}", made.ca, seen
    finally:
        server.shutdown()
        server.server_close()


def test_kubectl_runs_the_plugin_and_shows_why_it_failed(
        stack: Stack, cluster: str, home: dict[str, str], tmp_path: Path,
        recorder: tuple[str, Path, list[tuple[str, str | None]]]) -> None:
    """kubectl sends no credentials to a plain-HTTP server (kubernetes/kubectl#744), and the
    stack is plain HTTP: the kubeconfig (made with the stand-in's CA) is pointed at an HTTPS
    stand-in for the proxy, which sees the token the plugin gave kubectl."""
    kubectl = tool("kubectl")
    origin, ca, seen = recorder
    login(stack, home)
    made = fplus(home | {"FPLUS_CA_FILE": str(ca)}, "cluster", "kubeconfig", "kubeconfig-edge")
    assert "plain HTTP, to which kubectl sends no credentials" in made.stderr
    config = tmp_path / "edge.kubeconfig"
    config.write_text(made.stdout.replace(stack.manager.url, origin))

    def get_version() -> subprocess.CompletedProcess[str]:
        return subprocess.run([kubectl, "--kubeconfig", str(config), "get", "--raw", "/version",
                               "--request-timeout", "20s"], env=home, capture_output=True,
                              text=True, timeout=60, check=False)

    signed_in = get_version()
    assert signed_in.returncode == 0 and json.loads(signed_in.stdout)["major"] == "1", (
        signed_in.stderr)
    [(path, authorization)] = seen
    assert path.partition("?")[0] == f"/v1/cluster/{cluster}/kube/version"
    assert authorization is not None and authorization.startswith("Bearer ")
    _accepted(stack, cluster, {"status": {"token": authorization.removeprefix("Bearer ")}})

    fplus(home, "logout")
    logged_out = get_version()
    assert logged_out.returncode != 0 and len(seen) == 1  # nothing sent without a token
    assert "fplus: not logged in: run `fplus login URL`" in logged_out.stderr, logged_out.stderr
