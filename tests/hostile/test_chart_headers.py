"""A chart archive whose tar headers declare more than any chart holds.

The probe's 556-byte bzip2 upload held one GNU long-name header (``././@LongLink``, type
``L``) declaring a 500 MB name: Python's ``tarfile`` read the whole name into memory before
any import limit applied, and the Cluster Manager worker went from 83 MB to 1,062 MB. The
headers are now read with limits of their own before anything is kept, so the upload is
refused with 422 and the worker's peak memory barely moves.
"""

from __future__ import annotations

import bz2
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from fplus.config_store import uuids
from harness.gitcli import bare
from harness.servers import Api
from harness.stack import Stack, wait_for
from tests.conftest import grant, make_user

CHARTS = uuids.Shared.HelmChartsRepo
DECLARED = 500_000_000
"""The long name's declared (and actual) size."""
MIB = 1024 * 1024
CHART_YAML = b"apiVersion: v2\nname: demo\nversion: 1.0.0\n"


def _long_name_bomb() -> bytes:
    """A bzip2 tar: an ``L`` header declaring :data:`DECLARED` bytes of name, the name, and
    the ``Chart.yaml`` it names."""
    header = tarfile.TarInfo("././@LongLink")
    header.type = tarfile.GNUTYPE_LONGNAME
    header.size = DECLARED
    packer = bz2.BZ2Compressor(9)
    out = [packer.compress(header.tobuf(tarfile.GNU_FORMAT))]
    chunk = b"a" * MIB
    for _ in range(DECLARED // MIB):
        out.append(packer.compress(chunk))
    tail = DECLARED % MIB
    member = tarfile.TarInfo("demo/Chart.yaml")
    member.size = len(CHART_YAML)
    out.append(packer.compress(b"a" * tail + b"\0" * (-DECLARED % 512)
                               + member.tobuf(tarfile.GNU_FORMAT)
                               + CHART_YAML.ljust(512, b"\0") + b"\0" * 1024))
    out.append(packer.flush())
    return b"".join(out)


@pytest.fixture(scope="module")
def stack(module_stack: Stack) -> Iterator[Stack]:
    """A stack of this module's own: its worker's peak memory is measured."""
    wait_for(lambda: bare(module_stack.repos / f"{CHARTS}.git", "rev-parse", "--verify", "-q",
                          "main", check=False), what="the charts repo's first commit")
    yield module_stack


def _peak_mib(pid: int) -> float:
    """The process's peak resident memory (VmHWM), in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM")


def test_a_long_name_header_declaring_500_mb_is_refused_before_it_is_read(
        stack: Stack) -> None:
    bomb = _long_name_bomb()
    assert len(bomb) < 2048
    uid, session = make_user(stack.admin)
    grant(stack.admin, uid, uuids.EdgePerm.Imports, uuids.NULL)
    importer = Api(stack.manager.url, session.auth)
    head = bare(stack.repos / f"{CHARTS}.git", "rev-parse", "main").strip()
    worker = stack.manager.worker_pid()
    assert worker is not None
    before = _peak_mib(worker)
    r = importer.post("/v1/chart", data=bomb, timeout=120,
                      headers={"Content-Type": "application/octet-stream"})
    assert r.status_code == 422, (r.status_code, r.text[:300])
    assert stack.manager.worker_pid() == worker  # the same worker, alive
    assert _peak_mib(worker) - before < 100
    assert "long name" in r.json()["error"] and "nothing was imported" in r.json()["error"]
    assert bare(stack.repos / f"{CHARTS}.git", "rev-parse", "main").strip() == head
