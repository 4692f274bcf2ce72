"""``fplus cluster kubeconfig`` and ``fplus kube-credential``: kubectl reaching an edge's
Kubernetes API through the Cluster Manager's proxy (``/v1/cluster/<uuid>/kube``).

The kubeconfig holds no secret: its user is an exec credential plugin, ``fplus
kube-credential``, which hands kubectl the token ``fplus`` holds each time kubectl asks (and
says until when, so kubectl asks again before it lapses)."""

from __future__ import annotations

import base64
import json
import os
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path

import click
import yaml

from fplus.jsontypes import as_object

from . import profile as profiles
from . import refs
from .api import ApiError
from .session import credential, manager, rfc3339

EXEC_API = "client.authentication.k8s.io/v1"
EXEC_APIS = (EXEC_API, "client.authentication.k8s.io/v1beta1")
"""The ExecCredential versions ``kube-credential`` answers in: the one kubectl asks for."""
INSTALL_HINT = ("This kubeconfig runs `fplus kube-credential` for its credentials: install "
                "fplus (pip install fplus-edge-manager) and run `fplus login URL`.")


def build(name: str, server: str, ca_pem: bytes | None, command: str,
          env: Mapping[str, str] | None = None) -> dict[str, object]:
    """A kubeconfig (``apiVersion: v1``, ``kind: Config``) with one cluster ``name`` at
    ``server`` (trusting ``ca_pem`` when given, else the system's CAs), one user whose
    credentials come from ``command kube-credential`` (with ``env``), one context named
    ``name``, which is the current one."""
    cluster: dict[str, object] = {"server": server}
    if ca_pem:
        cluster["certificate-authority-data"] = base64.b64encode(ca_pem).decode()
    plugin: dict[str, object] = {"apiVersion": EXEC_API, "command": command,
                                 "args": ["kube-credential"]}
    if env:
        plugin["env"] = [{"name": k, "value": v} for k, v in sorted(env.items())]
    plugin |= {"installHint": INSTALL_HINT, "interactiveMode": "Never",
               "provideClusterInfo": False}
    user = f"fplus-{name}"
    return {"apiVersion": "v1", "kind": "Config",
            "clusters": [{"name": name, "cluster": cluster}],
            "users": [{"name": user, "user": {"exec": plugin}}],
            "contexts": [{"name": name, "context": {"cluster": name, "user": user}}],
            "current-context": name, "preferences": {}}


def executable(argv0: str | None = None) -> str:
    """The running ``fplus`` as an absolute path (kubectl runs the plugin with its own
    ``PATH``), else the first ``fplus`` on ``PATH``, else plain ``fplus``."""
    for candidate in (sys.argv[0] if argv0 is None and sys.argv else argv0, "fplus"):
        found = shutil.which(candidate) if candidate else None
        if found and Path(found).name.startswith("fplus"):
            return os.path.abspath(found)
    return "fplus"


def profile_env(env: Mapping[str, str] = os.environ) -> dict[str, str]:
    """``FPLUS_CONFIG`` naming the session file in use when it is not the default one, so
    the plugin uses the same login whatever environment kubectl runs it in."""
    path = profiles.config_path(env)
    if path == profiles.config_path({}):
        return {}
    return {"FPLUS_CONFIG": str(path.absolute())}


def _write(path: Path, text: str) -> None:
    """``text`` into ``path``, mode 0600 (created or overwritten)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        os.fchmod(fh.fileno(), 0o600)  # an existing file keeps its mode otherwise
        fh.write(text)


def _tunnel_note(name: str, found: Mapping[str, object]) -> str | None:
    """A line on stderr when the cluster's tunnel is known to be down."""
    tunnel = as_object(found.get("tunnel"))
    if not tunnel or tunnel.get("state") == "connected":
        return None
    since = tunnel.get("since")
    when = f"since {since}" if since else "its edge never connected"
    return (f"note: the tunnel of {name} is down ({when}): kubectl is answered 503 until "
            "its Edge Sync connects")


def _plain_http_note(base: str) -> str | None:
    """A line on stderr when the Cluster Manager is plain HTTP: kubectl runs no credential
    plugin and sends no token to an ``http://`` server (kubernetes/kubectl#744)."""
    if not base.lower().startswith("http://"):
        return None
    return (f"warning: {base} is plain HTTP, to which kubectl sends no credentials: this "
            "kubeconfig works once the Cluster Manager is reached over HTTPS")


@click.command("kubeconfig")
@click.argument("cluster_ref", metavar="NAME|UUID")
@click.option("-o", "--output", "out", metavar="FILE", type=click.Path(
    path_type=Path, dir_okay=False), help="write it to FILE (mode 0600) instead of stdout")
def kubeconfig(cluster_ref: str, out: Path | None) -> None:
    """Print a kubeconfig for the cluster's Kubernetes API, reached through the Cluster
    Manager (kubectl --kubeconfig FILE get nodes); its credentials come from
    `fplus kube-credential`, the token of this login."""
    api = manager()
    cluster_uuid = refs.cluster(api, cluster_ref)
    try:
        found: Mapping[str, object] = api.cluster(cluster_uuid)[0]
    except ApiError as exc:  # a kube grant alone does not show the cluster: by UUID, go on
        if exc.status != 403:
            raise
        found = {}
    name = str(found.get("name") or cluster_ref)
    ca_file = api.profile.ca_file
    try:
        ca_pem = Path(ca_file).read_bytes() if ca_file else None
    except OSError as exc:
        raise ApiError(0, f"cannot read the CA file {ca_file} ({exc.strerror}): check "
                          "--ca-file of `fplus login` (or FPLUS_CA_FILE)") from None
    config = build(name, f"{api.base}/v1/cluster/{cluster_uuid}/kube", ca_pem, executable(),
                   profile_env())
    text = yaml.safe_dump(config, sort_keys=False)
    if out is None:
        click.echo(text, nl=False)
    else:
        _write(out, text)
        click.echo(f"wrote {out}: kubectl --kubeconfig {out} get nodes", err=True)
    for note in (_plain_http_note(api.base), _tunnel_note(name, found)):
        if note:
            click.echo(f"fplus: {note}", err=True)


def _asked_version(env: Mapping[str, str] = os.environ) -> str:
    """The ExecCredential version kubectl asks for (``KUBERNETES_EXEC_INFO``), else v1."""
    try:
        asked = json.loads(env.get("KUBERNETES_EXEC_INFO") or "{}")
    except ValueError:
        return EXEC_API
    version = asked.get("apiVersion") if isinstance(asked, dict) else None
    return version if version in EXEC_APIS else EXEC_API


@click.command("kube-credential")
def kube_credential() -> None:
    """Print the ExecCredential kubectl asks a kubeconfig from `fplus cluster kubeconfig`
    for: the token of this login (FPLUS_USER/FPLUS_PASSWORD: a new one), and until when
    kubectl may use it. Not logged in, or the session ended: a message, exit 1."""
    token, until = credential()
    status: dict[str, str] = {"token": token}
    if until is not None:
        status["expirationTimestamp"] = rfc3339(until)
    click.echo(json.dumps({"apiVersion": _asked_version(), "kind": "ExecCredential",
                           "status": status}))
