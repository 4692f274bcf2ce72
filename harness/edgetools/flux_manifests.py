"""The manifests Flux's CLI embeds, made from the controllers' own Go modules.

The ``flux`` binary embeds ``cmd/flux/manifests/*.yaml``, which its release build generates
(``manifests/scripts/bundle.sh``) from ``manifests/bases/<controller>``; each base names its
controller's release assets (``<controller>.crds.yaml``, ``<controller>.deployment.yaml``)
by URL. Those assets are ``kustomize build config/crd`` and ``config/manager`` of the
controller's module at that version, so we build them from the module proxy's copy instead.
Only the controllers the edge runs are made (source, kustomize, helm); the others' modules
are not all served by the proxy, so the CLI installs with ``--components`` naming these.
"""

from __future__ import annotations

import re
import shutil
import stat
import subprocess
from collections.abc import Callable
from pathlib import Path

from harness.edgetools.build import module_dir

CONTROLLERS = ("source-controller", "kustomize-controller", "helm-controller")
ASSET = re.compile(r"https://github\.com/fluxcd/(?P<repo>[a-z-]+)/releases/download/"
                   r"(?P<version>v[0-9][^/]*)/(?P<file>[\w.-]+)")


def kustomize(kubectl: Path, directory: Path) -> str:
    """``kubectl kustomize`` of a directory (the kustomize that Kubernetes release vendors)."""
    run = subprocess.run([str(kubectl), "kustomize", str(directory)], capture_output=True,
                         text=True)
    if run.returncode != 0:
        raise RuntimeError(f"kustomize {directory}: {run.stderr.strip()[-2000:]}")
    return run.stdout


def writable_copy(source: Path, target: Path) -> None:
    """Copy a module (read-only in the module cache) into a tree we may edit."""
    shutil.copytree(source, target, symlinks=True)
    for path in [target, *target.rglob("*")]:
        if not path.is_symlink():
            path.chmod(path.stat().st_mode | stat.S_IWUSR)


def localise_base(base: Path, kubectl: Path, scratch: Path) -> None:
    """Replace a base's release-asset URLs by files built from the controller's module."""
    kustomization = base / "kustomization.yaml"
    text = kustomization.read_text()
    for match in set(ASSET.finditer(text)):
        controller_dir, _ = module_dir(f"github.com/fluxcd/{match['repo']}", match["version"],
                                       scratch)
        part = "crd" if match["file"].endswith(".crds.yaml") else "manager"
        (base / match["file"]).write_text(kustomize(kubectl, controller_dir / "config" / part))
        text = text.replace(match[0], match["file"])
    kustomization.write_text(text)


def embed_manifests(flux_src: Path, kubectl: Path, scratch: Path) -> None:
    """Write ``cmd/flux/manifests`` as the release build would, for our controllers."""
    manifests, out = flux_src / "manifests", flux_src / "cmd" / "flux" / "manifests"
    out.mkdir(exist_ok=True)
    for controller in CONTROLLERS:
        base = manifests / "bases" / controller
        localise_base(base, kubectl, scratch)
        (out / f"{controller}.yaml").write_text(kustomize(kubectl, base))
    for part in ("rbac", "policies"):
        (out / f"{part}.yaml").write_text(kustomize(kubectl, manifests / part))


def preparer(kubectl: Path) -> Callable[[Path, Path], Path]:
    """A ``build`` preparer: copy flux2's module next to the wrapper and embed manifests."""
    def prepare(directory: Path, src: Path) -> Path:
        copy = src / "flux2"
        writable_copy(directory, copy)
        embed_manifests(copy, kubectl, src)
        return copy
    return prepare
