"""``python -m harness.edgetools [component ...]``: build the pinned edge toolchain.

Builds what is not yet in the cache, in the pins' order (kubectl first serves Flux's
manifests), says what each took, and exits 1 naming every component that failed while
still building the others.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time

from harness.edgetools import binary, cache_root, pins
from harness.edgetools.build import build
from harness.edgetools.flux_manifests import preparer


def log(line: str) -> None:
    print(line, flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="edge-tools", description=__doc__)
    parser.add_argument("components", nargs="*", help="only these (default: every pin)")
    parser.add_argument("--list", action="store_true", help="print pins and where they go")
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
    failed = []
    for c in chosen:
        if c.built():
            log(f"{c.name} {c.version}: built already in {c.home}")
            continue
        log(f"{c.name} {c.version}: building {c.module}")
        started = time.monotonic()
        try:
            prepare = preparer(binary("kubectl")) if c.module.startswith(
                "github.com/fluxcd/flux2") else None
            build(c, log, prepare)
        except Exception as error:
            failed.append(c.name)
            log(f"{c.name} {c.version}: FAILED: {error}")
            continue
        log(f"{c.name} {c.version}: built in {time.monotonic() - started:.0f} s")
    used = sum(p.stat().st_size for p in cache_root().rglob("*") if p.is_file()) >> 20
    log(f"edge-tools: {len(chosen) - len(failed)} of {len(chosen)} components ready in "
        f"{cache_root()} ({used} MiB)")
    if failed:
        log(f"edge-tools: failed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
