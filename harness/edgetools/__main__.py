"""``python -m harness.edgetools [component ...]``: build the pinned edge toolchain.

Builds what is not yet in the cache, ``--jobs`` components at a time (a Go build keeps both
cores busy compiling, but not while it downloads modules or links, which another build's
compiling then fills); Flux's CLIs wait for kubectl, which renders their manifests. Says what
each took, and exits 1 naming every component that failed while still building the others.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from harness.edgetools import Component, binary, cache_root, pins
from harness.edgetools.build import build
from harness.edgetools.flux_manifests import preparer

JOBS_ENV = "FPLUS_EDGE_JOBS"
_print_lock = threading.Lock()


def log(line: str) -> None:
    with _print_lock:
        print(line, flush=True)


def needs_kubectl(c: Component) -> bool:
    """Flux's CLI embeds manifests that kubectl's kustomize renders at build time."""
    return c.module.startswith("github.com/fluxcd/flux2")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="edge-tools", description=__doc__)
    parser.add_argument("components", nargs="*", help="only these (default: every pin)")
    parser.add_argument("--list", action="store_true", help="print pins and where they go")
    parser.add_argument("--jobs", type=int, default=int(os.environ.get(JOBS_ENV) or 2),
                        help=f"components built at once (default 2, or ${JOBS_ENV})")
    args = parser.parse_args(argv)
    chosen = [c for c in pins() if not args.components or c.name in args.components]
    if args.list:
        for c in chosen:
            log(f"{c.name:22} {c.module}@{c.version} -> {c.bin_dir} "
                f"({'built' if c.built() else 'not built'})")
        return 0
    if shutil.which("go") is None:
        log("edge-tools: no `go` on PATH (Go 1.26 and the module proxy are needed)")
        return 1
    failed: list[str] = []
    kubectl_ready = threading.Event()
    if binary_built("kubectl"):
        kubectl_ready.set()

    def one(c: Component) -> None:
        if c.built():
            log(f"{c.name} {c.version}: built already in {c.home}")
        else:
            if needs_kubectl(c):
                kubectl_ready.wait()
            log(f"{c.name} {c.version}: building {c.module}")
            started = time.monotonic()
            try:
                build(c, log, preparer(binary("kubectl")) if needs_kubectl(c) else None)
                log(f"{c.name} {c.version}: built in {time.monotonic() - started:.0f} s")
            except Exception as error:
                failed.append(c.name)
                log(f"{c.name} {c.version}: FAILED: {error}")
        if "kubectl" in c.binaries:
            kubectl_ready.set()  # built or failed: the Flux builds go on (and say why)

    # What waits for kubectl goes last, so it never holds a slot another build could use.
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        list(pool.map(one, sorted(chosen, key=needs_kubectl)))
    if not any("kubectl" in c.binaries for c in chosen):
        kubectl_ready.set()
    used = sum(p.stat().st_size for p in cache_root().rglob("*") if p.is_file()) >> 20
    log(f"edge-tools: {len(chosen) - len(failed)} of {len(chosen)} components ready in "
        f"{cache_root()} ({used} MiB)")
    if failed:
        log(f"edge-tools: failed: {', '.join(failed)}")
    return 1 if failed else 0


def binary_built(name: str) -> bool:
    try:
        binary(name)
    except LookupError:
        return False
    return True


if __name__ == "__main__":
    sys.exit(main())
