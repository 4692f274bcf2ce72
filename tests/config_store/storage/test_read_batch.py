"""A read-only batch (``Core.read_batch``) reads through one snapshot: a write committed
while it runs is not seen by its later reads, and is seen after it."""

from __future__ import annotations

import threading
from pathlib import Path

from fplus.config_store._domain.core.state import Core
from fplus.config_store._domain.store import open_store

APP, OBJ = "c3f2b7e4-1d0a-4f3e-9b1a-2a5c6d7e8f90", "0d4e5f6a-7b8c-4d9e-8f0a-1b2c3d4e5f60"


def _write(core: Core, value: str) -> None:
    with core.raw_write() as writer:
        writer.put_config(APP, OBJ, f'"{value}"', f"etag-{value}")


def test_reads_of_a_read_batch_share_one_snapshot(tmp_path: Path) -> None:
    core = open_store(tmp_path / "data", "pw").core
    _write(core, "before")
    with core.read_batch():
        first = core.reader().get_config(APP, OBJ)
        writer = threading.Thread(target=_write, args=(core, "after"))
        writer.start()  # another request's write, committed while the batch reads
        writer.join(10)
        assert not writer.is_alive()
        second = core.reader().get_config(APP, OBJ)
    assert first == second == ('"before"', "etag-before")
    assert core.reader().get_config(APP, OBJ) == ('"after"', "etag-after")
    core.storage.close()
