"""Harness: the default bootstrap script for a sample cluster, run against a recording kubectl.

``script(...)`` renders the default entry the way the Cluster Manager does and packs the
per-cluster files; ``FakeEdge`` installs ``fake_kubectl.sh`` as ``kubectl`` first on PATH with
a cluster state of its own and runs scripts with ``sh`` (no controlling terminal unless a
test gives one), checking every time that the script's temp dir is gone afterwards.
"""

from __future__ import annotations

import fcntl
import functools
import marshal
import os
import shutil
import subprocess
import sys
import termios
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

import bootstrap
import manifests
from cluster_manager.reconcile.rendering import repo_content
from templating import render
from tests.manifests.samples import CONTEXTS

SHARED = Path(__file__).resolve().parents[3] / "shared"
FLUX_INSTALL = SHARED / "flux" / "flux-install-v2.7.5.yaml"
FLUX_VERSION = "2.7.5"
FLUX_URL = f"https://github.com/fluxcd/flux2/releases/download/v{FLUX_VERSION}/install.yaml"
TIMEOUT = "300s"
FAKE_KUBECTL = Path(__file__).with_name("fake_kubectl.sh")
FAKE_APPLY = Path(__file__).with_name("fake_kubectl_apply.py")
SH = shutil.which("sh") or "/bin/sh"
SHELLCHECK = Path(sys.executable).with_name("shellcheck")
# What each sample cluster's Secrets get (quotes, YAML and shell syntax on purpose).
PASSWORDS = {"flux": ("op1flux/{name}", "p'a\"s$s: #`x` {{y}}"),
             "sync": ("op1sync/{name}", "- yes\n  no")}
# The Flux CRDs the bootstrap script checks and waits for, with the version it needs.
FLUX_APIS = {"gitrepositories.source.toolkit.fluxcd.io": "v1",
             "helmrepositories.source.toolkit.fluxcd.io": "v1",
             "kustomizations.kustomize.toolkit.fluxcd.io": "v1",
             "helmreleases.helm.toolkit.fluxcd.io": "v2"}


def bootstrap_context(sample: dict[str, Any]) -> dict[str, Any]:
    """The context the Cluster Manager renders the Bootstrap script entry with."""
    return {"uuid": sample["uuid"], "name": sample["name"], "namespace": sample["namespace"],
            "files": bootstrap.PLACEHOLDER,
            "flux": {"version": FLUX_VERSION, "install_url": FLUX_URL,
                     "secret": sample["flux"]["secret"]},
            "edge_sync": {"credentials_secret": sample["edge_sync"]["credentials_secret"]},
            "timeout": TIMEOUT}


def secrets_for(sample: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """Secret name → (username, password) for ``credentials.yaml``."""
    flux_user, flux_pw = PASSWORDS["flux"]
    sync_user, sync_pw = PASSWORDS["sync"]
    return {sample["flux"]["secret"]: (flux_user.format(**sample), flux_pw),
            sample["edge_sync"]["credentials_secret"]: (sync_user.format(**sample), sync_pw)}


def extra_files(sample: dict[str, Any], *, credentials: bool = True,
                air_gapped: bool = False) -> dict[str, str]:
    """The files the Cluster Manager adds: self-link, credentials, Flux install."""
    files = {"self-link.yaml": repo_content(manifests.load("flux-template"), sample).self_link}
    if credentials:
        files["credentials.yaml"] = bootstrap.credentials_manifest(sample["namespace"],
                                                                   secrets_for(sample))
    if air_gapped:
        files["flux-system.yaml"] = FLUX_INSTALL.read_text(encoding="utf-8")
    return files


def rendered_entry(sample: dict[str, Any]) -> dict[str, Any]:
    return render(manifests.load("bootstrap-script"), bootstrap_context(sample))


@functools.cache
def script(sample_name: str = "defaults", **options: bool) -> str:
    """The whole bootstrap script for one sample cluster (built once per session)."""
    sample = CONTEXTS[sample_name]
    return bootstrap.build_script(rendered_entry(sample), extra_files(sample, **options))


@dataclass
class Run:
    """One run of a script: exit status, output and the kubectl calls it made."""

    returncode: int
    stdout: str
    stderr: str
    calls: list[dict[str, Any]] = field(default_factory=list)

    @property
    def argvs(self) -> list[list[str]]:
        return [call["argv"] for call in self.calls]

    def applied(self, name: str) -> list[dict[str, Any]]:
        """The documents of local file ``name`` as applied (every time it was)."""
        return [doc for call in self.calls if name in call["files"]
                for doc in yaml.safe_load_all(call["files"][name]) if doc]


class FakeEdge:
    """A recording kubectl with a cluster state, and a way to run scripts against it.

    The state is the file tree described at the top of fake_kubectl.sh.
    """

    def __init__(self, root: Path, cache: Path) -> None:
        self.root = root
        self.cache = cache  # parsed manifests by content, shared by the edges of a session
        self.bin = root / "bin"
        self.state = root / "kube"
        self.scratch = root / "tmp"  # TMPDIR of the scripts: must end up empty
        for directory in (self.bin, self.state / "calls", self.scratch):
            directory.mkdir(parents=True)
        self._install("kubectl", FAKE_KUBECTL.read_text(encoding="utf-8"))
        site = str(Path(yaml.__file__).resolve().parents[1])
        helper = FAKE_APPLY.read_text(encoding="utf-8").replace('SITE = ""', f"SITE = {site!r}", 1)
        self._install("kubectl-apply", f"#!{sys.executable} -IS\n{helper}")
        (self.state / "count").write_text("0\n", encoding="utf-8")
        (self.state / "context").write_text("edge-admin@line\n", encoding="utf-8")
        self.serve_urls({FLUX_URL: FLUX_INSTALL})
        for namespace in ("default", "kube-system"):
            self.add("Namespace", "", namespace)

    def _install(self, name: str, text: str) -> None:
        (self.bin / name).write_text(text, encoding="utf-8")
        (self.bin / name).chmod(0o755)

    # ------------------------------------------------------------------ cluster state
    def _object(self, kind: str, namespace: str, name: str) -> Path:
        return self.state / "objects" / kind / (namespace or "_") / name

    def add(self, kind: str, namespace: str, name: str, content: bytes = b"") -> None:
        path = self._object(kind, namespace, name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)

    def add_secret(self, namespace: str, name: str, string_data: dict[str, str]) -> None:
        self.add("Secret", namespace, name, marshal.dumps(string_data))

    def has(self, kind: str, namespace: str, name: str) -> bool:
        return self._object(kind, namespace, name).exists()

    def secrets(self, namespace: str) -> dict[str, dict[str, str]]:
        """Secret name → stringData of every Secret in ``namespace``."""
        found = self.state / "objects" / "Secret" / namespace
        return {p.name: marshal.loads(p.read_bytes()) for p in found.iterdir()}

    def install_flux(self, served: dict[str, list[str]]) -> None:
        """Flux as installed earlier by someone else: helm-controller and these CRDs."""
        self.add("Namespace", "", "flux-system")
        self.add("Deployment", "flux-system", "helm-controller")
        for crd, versions in served.items():
            self.add("CustomResourceDefinition", "", crd, f"{' '.join(versions)}\n".encode())

    def serve_urls(self, urls: dict[str, Path]) -> None:
        """What ``kubectl apply -f URL`` downloads (nothing else is reachable)."""
        (self.state / "urls").write_text("".join(f"{url}\t{path}\n" for url, path in urls.items()),
                                         encoding="utf-8")

    def unreachable(self) -> None:
        (self.state / "unreachable").touch()

    def fail_wait(self, target: str) -> None:
        """Make ``kubectl wait … TYPE/NAME`` time out."""
        path = self.state / "fail-wait" / target
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()

    def calls(self) -> list[dict[str, Any]]:
        """The calls logged since the last run started: argv, working dir, -f file content."""
        logged = sorted((p for p in (self.state / "calls").iterdir() if p.suffix == ""),
                        key=lambda p: int(p.name))
        calls = []
        for path in logged:
            cwd, *argv = path.read_text(encoding="utf-8").split("\n")[:-1]
            files = path.with_suffix(".files")
            calls.append({"cwd": cwd, "argv": argv,
                          "files": marshal.loads(files.read_bytes()) if files.exists() else {}})
        return calls

    # ------------------------------------------------------------------ running
    def env(self, path: str | None = None) -> dict[str, str]:
        return {"PATH": path if path is not None else f"{self.bin}:{os.environ['PATH']}",
                "HOME": str(self.root), "LANG": "C.UTF-8", "TMPDIR": str(self.scratch),
                "FAKE_KUBE_DIR": str(self.state), "FAKE_KUBE_CACHE": str(self.cache)}

    def run(self, text: str, *args: str, path: str | None = None,
            tty_input: str | None = None, from_stdin: bool = False) -> Run:
        """Run ``text`` as ``sh FILE ARGS`` (``from_stdin``: ``sh -s -- ARGS <FILE``, as
        ``curl … | sh`` does); with ``tty_input``, on a terminal that has it typed."""
        file = self.root / "bootstrap"
        file.write_text(text, encoding="utf-8")
        for logged in (self.state / "calls").iterdir():
            logged.unlink()
        command = [SH, "-s", "--", *args] if from_stdin else [SH, str(file), *args]
        if tty_input is None:
            with file.open("rb") if from_stdin else open(os.devnull, "rb") as stdin:
                done = subprocess.run(command, env=self.env(path), cwd=self.root, text=True,
                                      capture_output=True, stdin=stdin,
                                      start_new_session=True, timeout=60, check=False)
        else:
            done = self._run_on_terminal(command, tty_input, path)
        assert list(self.scratch.iterdir()) == [], "the script left its temp dir behind"
        return Run(done.returncode, done.stdout, done.stderr, self.calls())

    def _run_on_terminal(self, command: list[str], typed: str,
                         path: str | None) -> subprocess.CompletedProcess[str]:
        primary, secondary = os.openpty()
        try:
            os.write(primary, typed.encode())

            def take_terminal() -> None:  # in the child: new session, this pty controls it
                os.setsid()
                fcntl.ioctl(0, termios.TIOCSCTTY, 0)

            with subprocess.Popen(command, env=self.env(path), cwd=self.root, text=True,
                                  stdin=secondary, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, preexec_fn=take_terminal) as proc:
                out, err = proc.communicate(timeout=60)
            return subprocess.CompletedProcess(command, proc.returncode, out, err)
        finally:
            os.close(primary)
            os.close(secondary)


def shellcheck(text: str, tmp_path: Path, name: str = "script") -> str:
    """shellcheck -s sh findings for ``text`` ('' when clean); the binary is the venv's."""
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    done = subprocess.run([str(SHELLCHECK), "-s", "sh", "-f", "gcc", str(path)],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode in (0, 1), done.stderr
    return done.stdout


def syntax_errors(text: str, tmp_path: Path) -> str:
    """What ``sh -n`` says about ``text`` ('' when it parses)."""
    path = tmp_path / "syntax"
    path.write_text(text, encoding="utf-8")
    done = subprocess.run([SH, "-n", str(path)], capture_output=True, text=True, timeout=30,
                          check=False)
    return f"{done.returncode}: {done.stderr}" if done.returncode else ""


def tools_without_kubectl(root: Path) -> str:
    """A PATH with only what the wrapper itself needs (no kubectl anywhere on it)."""
    tools = root / "tools"
    tools.mkdir()
    for tool in ("mktemp", "rm", "cat"):
        found = shutil.which(tool)
        assert found, tool
        (tools / tool).symlink_to(found)
    return str(tools)
