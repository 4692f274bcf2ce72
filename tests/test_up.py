"""``cluster-manager up``: the all-in-one stack starts, answers, and stops cleanly."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import requests

from fplus.config_store import uuids
from harness.servers import free_port_block, plain_env, start_all_in_one, wait_until_up

REPO = Path(__file__).resolve().parents[1]


def test_up_runs_the_stack_and_stops_it(tmp_path: Path) -> None:
    port = free_port_block(3)
    proc = start_all_in_one(tmp_path / "data", port, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    banner: list[str] = []
    try:
        wait_until_up(f"http://127.0.0.1:{port}/ping", proc=proc)  # the manager starts last
        assert proc.stdout is not None
        for line in proc.stdout:  # the banner comes once every service answers
            banner.append(line)
            if "Ctrl-C stops everything" in line:
                break
        assert f"     console       http://127.0.0.1:{port}/ui/" in "".join(banner)
        [login] = [line.strip() for line in banner if "fplus login" in line]
        env = plain_env()
        done = subprocess.run(["sh", "-c", login], cwd=REPO, capture_output=True, text=True,
                              env=env | {"XDG_CONFIG_HOME": str(tmp_path / "config")})
        assert done.returncode == 0, done.stderr  # the printed login line works as it is
        assert f"Config Store: http://127.0.0.1:{port + 1}" in done.stderr
        password = (tmp_path / "data/config-store/admin-password").read_text().strip()
        auth = ("admin", password)
        assert requests.get(f"http://127.0.0.1:{port + 1}/v2/app", auth=auth).ok
        # no cluster repos yet: only the central repos the seed step configures
        assert sorted(requests.get(f"http://127.0.0.1:{port + 2}/v1/status",
                                   auth=auth).json()) == \
            sorted([uuids.Shared.HelmChartsRepo, uuids.Shared.FluxSystemRepo])
    finally:
        os.kill(proc.pid, signal.SIGTERM)
        rest, _ = proc.communicate(timeout=30)
        out = "".join(banner) + rest
    assert proc.returncode == 0
    assert "Ctrl-C stops everything" in out
    assert password not in out  # generated on first start; only its file is named
    assert "Generated the admin password, saved in" in out
    for p in (port, port + 1, port + 2):  # children are gone too
        try:
            requests.get(f"http://127.0.0.1:{p}/ping", timeout=1)
            raise AssertionError(f"port {p} still answers")
        except requests.ConnectionError:
            pass
