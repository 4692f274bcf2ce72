"""Finding 10: a backup's files were readable by others (bundles and README 0644), and keep
those modes wherever they are copied. Every file of a real backup is 0600 and every
directory 0700, whatever the umask of whoever takes it."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from fplus.config_store import uuids
from harness.gitcli import bare
from harness.stack import Stack, wait_for
from tests.backup.stacks import cli
from tests.cluster_manager.escrow.conftest import bootstrap, keyfile_of, start


@pytest.fixture
def umask_022() -> Iterator[None]:
    """The common umask (files 0644 unless their writer says otherwise)."""
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    running = start(tmp_path_factory.mktemp("backup-modes"), escrow=True)
    try:
        bootstrap(running, "modes-one")
        wait_for(lambda: all(bare(running.repos / f"{repo}.git", "for-each-ref", check=False)
                             for repo in (uuids.Shared.HelmChartsRepo,
                                          uuids.Shared.FluxSystemRepo)),
                 what="the shared repos")
        yield running
    finally:
        running.stop()


def test_every_backup_file_is_0600_and_every_directory_0700(
        stack: Stack, tmp_path: Path, umask_022: None) -> None:
    out = tmp_path / "backup"
    done = cli("backup", stack, "--out", str(out), key=keyfile_of(stack.root))
    assert done.returncode == 0, done.stderr
    modes = {str(p.relative_to(out)): stat.S_IMODE(p.lstat().st_mode)
             for p in [out, *out.rglob("*")]}
    assert {"README.txt", "manifest.json", "config-store/auth.json",
            "cluster-manager/tables.json"} <= set(modes)
    assert len([p for p in modes if p.endswith(".bundle")]) >= 3  # the cluster's, the shared
    wrong = {name: f"{mode:04o}" for name, mode in modes.items()
             if mode != (0o700 if (out / name).is_dir() else 0o600)}
    assert wrong == {}
