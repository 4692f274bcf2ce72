"""The default bootstrap script for a sample cluster, built as the Cluster Manager builds it.

``script(...)`` renders the default entry the way the Cluster Manager does and packs the
per-cluster files. Scripts run with the real kubectl against an emulated cluster
(``tests/bootstrap/cluster.py``).
"""

from __future__ import annotations

import functools
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from fplus import bootstrap, manifests
from fplus.cluster_manager.changes.rendering import repo_content
from fplus.templating import render
from tests.bootstrap.test_pack import unpack, written
from tests.manifests.samples import CONTEXTS
from tests.shared_files import FLUX_INSTALL, need

FLUX_VERSION = "2.7.5"
FLUX_URL = f"https://github.com/fluxcd/flux2/releases/download/v{FLUX_VERSION}/install.yaml"
TIMEOUT = "300s"
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


NO_REACH = {"git": "", "config_store": "", "registries": ""}


def bootstrap_context(sample: dict[str, Any], flux_url: str = FLUX_URL,
                      timeout: str = TIMEOUT,
                      reach: dict[str, str] | None = None) -> dict[str, Any]:
    """The context the Cluster Manager renders the Bootstrap script entry with."""
    return {"uuid": sample["uuid"], "name": sample["name"], "namespace": sample["namespace"],
            "files": bootstrap.PLACEHOLDER,
            "flux": {"version": FLUX_VERSION, "install_url": flux_url,
                     "secret": sample["flux"]["secret"]},
            "edge_sync": {"credentials_secret": sample["edge_sync"]["credentials_secret"]},
            "reach": reach or NO_REACH, "timeout": timeout}


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
        files["flux-system.yaml"] = need(FLUX_INSTALL).read_text(encoding="utf-8")
    return files


def rendered_entry(sample: dict[str, Any], flux_url: str = FLUX_URL,
                   timeout: str = TIMEOUT) -> dict[str, Any]:
    return render(manifests.load("bootstrap-script"), bootstrap_context(sample, flux_url, timeout))


@functools.cache
def script(sample_name: str = "defaults", *, flux_url: str = FLUX_URL, timeout: str = TIMEOUT,
           **options: bool) -> str:
    """The whole bootstrap script for one sample cluster (built once per session).

    ``flux_url`` is where the script installs Flux from (tests serve the pinned release on
    loopback), ``timeout`` how long it waits for Flux; ``options`` go to :func:`extra_files`.
    """
    sample = CONTEXTS[sample_name]
    return bootstrap.build_script(rendered_entry(sample, flux_url, timeout),
                                  extra_files(sample, **options))


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


def script_files(script: str, where: Path) -> dict[str, str]:
    """The files the bootstrap script packs, written out by running only its unpacking part
    (everything before it sources bootstrap.sh)."""
    head = script.split(". ./bootstrap.sh")[0].replace('trap \'cd / && rm -rf "$fplus_tmp"\''
                                                       " EXIT", "")
    head = head.replace('cd "$fplus_tmp"', "") + "\n"
    where.mkdir()
    done = unpack(head, where)
    assert done.returncode == 0, done.stderr
    return {name: data.decode() for name, data in written(where).items()}
