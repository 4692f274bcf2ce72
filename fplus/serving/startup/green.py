"""gevent's monkey-patching for our service commands, without its repeated plugin look-ups.

``gevent.monkey.patch_all`` announces each module it patches to plugins registered as entry
points: 25 look-ups, each of which reads the metadata of every installed distribution (a tenth
of a CPU-second per service start, paid again by every process of a test suite). Here the
entry points are read once for the whole patching. Imports nothing of ours, and nothing that
must be imported after patching.
"""

from __future__ import annotations

import importlib
from importlib import metadata
from typing import Any


def patch_all() -> None:
    """``gevent.monkey.patch_all()``, with entry points read once while it runs."""
    from gevent import monkey

    everything = metadata.entry_points()
    original = metadata.entry_points

    def selected(**params: Any) -> Any:
        return everything.select(**params) if params else everything

    metadata.entry_points = selected
    try:
        monkey.patch_all()
    finally:
        metadata.entry_points = original


def run_patched(module: str, argv: list[str] | None = None) -> None:
    """Patch, then import ``module`` (a service's command) and run its ``main(argv)``: a
    service's entry point, so that nothing of the service is imported unpatched."""
    patch_all()
    importlib.import_module(module).main(argv)
