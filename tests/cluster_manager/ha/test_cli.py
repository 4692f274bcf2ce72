"""``cluster-manager serve`` refuses replica settings that cannot work in one line, before it
asks anything of the Config Store (none is running here)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness.servers import free_port, run_command


def _serve(tmp_path: Path, *args: str, env: dict[str, str] | None = None):
    return run_command("fplus.cluster_manager.cli", "serve", "--data-dir", str(tmp_path / "cm"),
                       "--port", str(free_port()), "--git", f"http://127.0.0.1:{free_port()}",
                       "--config-store", f"http://127.0.0.1:{free_port()}", *args, env=env)


@pytest.mark.parametrize(("args", "words"), [
    (("--leader-election", "database", "--lease-duration", "5", "--lease-renew", "5"),
     "shorter than the lease duration (5 s)"),
    (("--leader-election", "database", "--lease-retry", "0"), "must be more than 0"),
    (("--database", "mysql://cm@127.0.0.1/cm"), "not a sqlite:///FILE or postgresql://"),
])
def test_settings_that_cannot_work_are_one_line(tmp_path: Path, args: tuple[str, ...],
                                                words: str) -> None:
    done = _serve(tmp_path, *args)
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0], done.stderr


def test_kubernetes_election_without_a_cluster_or_kubeconfig_is_one_line(
        tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("FPLUS_", "KUBERNETES_"))} | {
        "KUBECONFIG": str(tmp_path / "no-such-kubeconfig")}
    done = _serve(tmp_path, "--leader-election", "kubernetes", env=env)
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "--leader-election kubernetes" in lines[0], done.stderr
