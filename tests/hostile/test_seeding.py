"""Seeding never silently cuts off a running service.

The probe: ``cluster-manager import-flux`` with administrator credentials and a ``--data-dir``
holding no password file re-seeded the ``cluster-manager`` principal with a new password; the
running Cluster Manager's notify then failed with 401 and it stopped commissioning, with
nothing but ``/healthz`` saying why (so did a second replica started with administrator
credentials and its own data dir). Now such a seed refuses in one line naming the file it
expected; ``seed --rotate-password`` replaces the password on purpose, the running service
says loudly that its login is refused, and it picks the new password up from its password
file without a restart.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from fplus.cluster_manager.reconcile.manager_account import password_file
from fplus.git_server._domain.setup import password_file as git_password_file
from harness.servers import admin_env, free_port, run_command
from harness.stack import Stack, create_cluster, start_stack, status, wait_for
from tests.shared_files import FLUX_INSTALL, need

READY_WITHIN = 90.0


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    running = start_stack(tmp_path_factory.mktemp("seeding"))
    yield running
    running.stop()


def _as_admin(stack: Stack, module: str, *args: str):
    return run_command(module, *args, "--config-store", stack.store.url,
                       env=admin_env(stack.store.url))


def _commissions(stack: Stack, name: str) -> None:
    cluster = create_cluster(stack.admin, name)
    wait_for(lambda: (status(stack.admin, cluster) or {}).get("ready"), READY_WITHIN,
             f"{name} ready")


def test_seeding_without_the_password_file_refuses_in_one_line(stack: Stack,
                                                               tmp_path: Path) -> None:
    manager_file = password_file(stack.root / "cm")
    before = manager_file.read_text()
    elsewhere = tmp_path / "elsewhere"
    flux_install = str(need(FLUX_INSTALL))
    for module, args, expected in (
            ("fplus.cluster_manager.cli", ("import-flux", flux_install, "--git", stack.git.url),
             password_file(elsewhere)),
            ("fplus.cluster_manager.cli", ("seed",), password_file(elsewhere)),
            ("fplus.cluster_manager.cli", ("serve", "--port", str(free_port()), "--git",
                                     stack.git.url), password_file(elsewhere)),  # a replica
            ("fplus.git_server.cli", ("seed",), git_password_file(elsewhere))):
        done = _as_admin(stack, module, *args, "--data-dir", str(elsewhere))
        assert done.returncode == 1, (module, args, done.stdout, done.stderr)
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and str(expected) in lines[0], lines
        assert "--rotate-password" in lines[0] and "Traceback" not in done.stderr
        assert not expected.exists()
    # with its own data dir, seeding again changes nothing for the running service
    again = _as_admin(stack, "fplus.cluster_manager.cli", "seed",
                      "--data-dir", str(stack.root / "cm"))
    assert again.returncode == 0, again.stderr
    assert manager_file.read_text() == before
    _commissions(stack, "still-commissioning")


def test_a_rotated_password_is_logged_loudly_and_picked_up_from_the_file(
        stack: Stack, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    done = _as_admin(stack, "fplus.cluster_manager.cli", "seed", "--rotate-password",
                     "--data-dir", str(elsewhere))
    assert done.returncode == 0, done.stderr
    new_password = password_file(elsewhere).read_text().strip()
    assert new_password and password_file(elsewhere).stat().st_mode & 0o077 == 0

    manager_file = password_file(stack.root / "cm")
    log = stack.root / f"cluster_manager-{stack.manager.port}.log"
    refused = wait_for(
        lambda: [line for line in log.read_text().splitlines()
                 if "refuses the login of cluster-manager" in line],
        60, "the Cluster Manager to log its refused login")
    assert str(manager_file) in refused[0] and "--rotate-password" in refused[0]
    assert new_password not in log.read_text()

    shutil.copyfile(password_file(elsewhere), manager_file)  # the operator hands it over
    _commissions(stack, "after-rotation")  # no restart
