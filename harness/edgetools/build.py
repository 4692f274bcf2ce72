"""Build one pinned component from its Go module, the way ``go install`` would if it could.

``go install module/cmd@version`` refuses modules whose ``go.mod`` has ``replace`` lines
(Kubernetes maps its staging modules to ``./staging``, etcd its siblings to ``../``, Flux
its ``api`` module to ``./api``). So each component is built from a small module of ours in
the cache that requires the pinned module and carries its replaces, a local path mapped to
the version the pinned ``go.mod`` requires (Kubernetes' ``v0.0.0`` staging modules to the
matching ``v0.<minor>.<patch>``). Only the Go module proxy is used; sums are checked
against the checksum database as usual.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness.edgetools import Component

Log = Callable[[str], None]


def go(*args: str, cwd: Path, env: dict[str, str] | None = None) -> str:
    """Run ``go``; raise with its last lines of output when it fails."""
    run = subprocess.run(["go", *args], cwd=cwd, capture_output=True, text=True,
                         env={**os.environ, **(env or {})})
    if run.returncode != 0:
        tail = "\n".join((run.stderr or run.stdout).strip().splitlines()[-15:])
        raise RuntimeError(f"go {' '.join(args[:2])} failed:\n{tail}")
    return run.stdout


def module_dir(module: str, version: str, scratch: Path) -> tuple[Path, dict[str, Any]]:
    """Download a module through the proxy: its source directory and its parsed go.mod."""
    info = json.loads(go("mod", "download", "-json", f"{module}@{version}", cwd=scratch))
    if info.get("Error"):
        raise RuntimeError(f"{module}@{version}: {info['Error']}")
    gomod = json.loads(go("mod", "edit", "-json", info["GoMod"], cwd=scratch))
    return Path(info["Dir"]), gomod


def staging_version(module: str, version: str) -> str | None:
    """Kubernetes' staging modules are published as v0.<minor>.<patch> of v1.<minor>.<patch>."""
    match = re.fullmatch(r"v1\.(\d+)\.(\d+)", version)
    return f"v0.{match[1]}.{match[2]}" if module == "k8s.io/kubernetes" and match else None


def carried_replaces(module: str, version: str, gomod: dict[str, Any]) -> list[str]:
    """The pinned module's replace lines, local paths mapped to published versions."""
    required = {r["Path"]: r["Version"] for r in gomod.get("Require") or []}
    lines = []
    for rep in gomod.get("Replace") or []:
        old, new = rep["Old"], rep["New"]
        if new["Path"].startswith("."):
            if old["Path"] not in required:
                continue  # e.g. etcd's `=> ./FORBIDDEN_DEPENDENCY` guards
            target = required[old["Path"]]
            if target.startswith("v0.0.0"):
                target = staging_version(module, version) or target
            lines.append(f"replace {old['Path']} => {old['Path']} {target}")
        else:
            old_spec = f"{old['Path']} {old['Version']}" if old.get("Version") else old["Path"]
            lines.append(f"replace {old_spec} => {new['Path']} {new.get('Version', '')}".rstrip())
    return lines


def ldflags(c: Component) -> str:
    """No symbol table or DWARF (``-s -w``: the tests never debug these, and linking them
    is much of a build's time), then the version stamps the binaries print (what their
    release builds set)."""
    return " ".join(filter(None, ("-s -w", _stamps(c))))


def _stamps(c: Component) -> str:
    v = c.version
    if c.module == "k8s.io/kubernetes":
        major, minor = v.lstrip("v").split(".")[:2]
        stamps = {"gitVersion": v, "gitMajor": major, "gitMinor": minor,
                  "gitTreeState": "clean"}
        return " ".join(f"-X {pkg}/version.{k}={val}" for pkg in
                        ("k8s.io/component-base", "k8s.io/client-go/pkg")
                        for k, val in stamps.items())
    if c.module.startswith("github.com/fluxcd/flux2"):
        return f"-X main.VERSION={v.lstrip('v')}"
    if c.module == "github.com/bitnami-labs/sealed-secrets":
        return f"-X main.VERSION={v}"
    if c.module == "code.gitea.io/gitea":
        return f"-X main.Version={v.lstrip('v')} -X 'main.Tags={' '.join(tags(c))}'"
    return ""


def tags(c: Component) -> list[str]:
    """Build tags: Gitea's SQLite driver (mattn's, through cgo) is behind ``sqlite``."""
    return ["sqlite", "sqlite_unlock_notify"] if c.module == "code.gitea.io/gitea" else []


def build_env(c: Component) -> dict[str, str]:
    """Static pure-Go builds, except where a tag needs cgo (as the release builds set it)."""
    env = {"GOFLAGS": "-mod=mod", "CGO_ENABLED": "1" if tags(c) else "0"}
    if c.module == "code.gitea.io/gitea":
        env["CGO_CFLAGS"] = "-O2 -g -DSQLITE_MAX_VARIABLE_NUMBER=32766"
    return env


def build_groups(c: Component) -> list[list[str]]:
    """The binaries built together: every one whose package's last element is its name
    (``go build -o DIR/`` names it so), and each other one on its own."""
    together = [n for n, rel in c.binaries.items() if rel != "." and rel.rsplit("/", 1)[-1] == n]
    alone = [[n] for n in c.binaries if n not in together]
    return ([together] if together else []) + alone


def write_wrapper(src: Path, c: Component, replaces: list[str],
                  local_source: Path | None = None) -> None:
    """The small module that requires the pinned one (optionally from a prepared copy)."""
    lines = [f"module fplus.invalid/edgetools/{c.name}", "", "go 1.26", "",
             f"require {c.module} {c.version}", "", *replaces]
    if local_source is not None:
        lines.append(f"replace {c.module} => ./{local_source.relative_to(src)}")
    (src / "go.mod").write_text("\n".join(lines) + "\n")


def build(c: Component, log: Log, prepare: Callable[[Path, Path], Path] | None = None) -> None:
    """Build ``c`` into its ``bin`` directory (atomically: a failed build leaves none).

    ``prepare(module_dir, src)`` may copy and complete the module's source (Flux's CLI
    embeds manifests its release build generates) and returns the copy's path.
    """
    src = c.home / "src"
    shutil.rmtree(c.home, ignore_errors=True)
    src.mkdir(parents=True)
    directory, gomod = module_dir(c.module, c.version, src)
    local = prepare(directory, src) if prepare else None
    write_wrapper(src, c, carried_replaces(c.module, c.version, gomod), local)
    staging = c.home / "bin.partial"
    staging.mkdir()
    for names in build_groups(c):
        packages = [c.package(name) for name in names]
        log(f"  go build {' '.join(packages)}")
        # One invocation for several main packages compiles what they share once and links
        # each while the others compile; `-o DIR/` names each binary after its package.
        out = f"{staging}/" if len(names) > 1 else str(staging / names[0])
        go("build", "-trimpath", "-tags", ",".join(tags(c)), "-ldflags", ldflags(c),
           "-o", out, *packages, cwd=src, env=build_env(c))
    (c.home / "module").symlink_to(directory)  # its data: kwok's stages, Helm charts
    staging.rename(c.bin_dir)
