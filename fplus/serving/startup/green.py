"""gevent's monkey-patching for our service commands, without its repeated plugin look-ups.

``gevent.monkey.patch_all`` announces each module it patches to plugins registered as entry
points: 25 look-ups, each of which reads the metadata of every installed distribution (a tenth
of a CPU-second per service start, paid again by every process of a test suite). Here the
entry points are read once for the whole patching. Imports nothing of ours, and nothing that
must be imported after patching.
"""

from __future__ import annotations

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
