"""``fplus cluster list --watch`` follows changes as the Config Store announces them (the
refresh interval is set far beyond the test's waits, so only notify can deliver them), and
``-q`` prints bare UUIDs for scripts."""

from __future__ import annotations

import json
import queue
import signal
import subprocess
import threading
from datetime import UTC, datetime
from typing import Any

import pytest

from fplus.config_store import uuids
from harness.stack import Stack
from tests.fplus_cli.test_journey import FPLUS, fplus, login


@pytest.fixture
def stack(shared_stack: Stack) -> Stack:
    """The session's stack: the watch looks only at its own clusters, by name."""
    return shared_stack


EDGE = uuids.App.EdgeClusterStatus


class Snapshots:
    """The JSON lines of a running ``list --watch -o json``."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc = proc
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)

    def until(self, check: Any, timeout: float = 30.0) -> list[dict[str, Any]]:
        """The first snapshot ``check`` accepts (each line must be a whole JSON list)."""
        seen = []
        while True:
            try:
                rows = json.loads(self.lines.get(timeout=timeout))
            except queue.Empty:
                raise AssertionError(f"no matching snapshot; saw {seen}") from None
            assert isinstance(rows, list)
            seen.append(rows)
            if check({r["name"]: r for r in rows}):
                return rows


def test_list_watch_follows_changes_live(stack: Stack, home: dict[str, str]) -> None:
    login(stack, home)
    proc = subprocess.Popen([FPLUS, "cluster", "list", "--watch", "-o", "json",
                             "--interval", "600"], env=home, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        snapshots = Snapshots(proc)
        snapshots.until(lambda by_name: "watched" not in by_name)
        cluster = fplus(home, "cluster", "create", "watched", "-q").stdout.strip()
        snapshots.until(lambda by_name: by_name.get("watched", {}).get("phase") == "Ready")
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        hosts = [{"hostname": name, "arch": "amd64", "k8s_version": "v1.31.2",
                  "control_plane": name == "n1", "os_version": "Debian 12", "ready": True}
                 for name in ("n1", "n2")]
        r = stack.admin.patch(f"/v2/app/{EDGE}/object/{cluster}",
                              json={"lastSeen": now, "hosts": hosts},
                              headers={"Content-Type": "application/merge-patch+json"})
        assert r.status_code == 204, r.text
        [row] = [r for r in snapshots.until(
            lambda by_name: by_name.get("watched", {}).get("phase") == "Online")
            if r["name"] == "watched"]
        assert row == {"uuid": cluster, "name": "watched", "phase": "Online", "lastSeen": now,
                       "syncState": "Unknown", "hosts": 2, "commit": row["commit"],
                       "labels": {}} \
            and len(row["commit"]) == 40
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=5)
    assert proc.returncode == 0, err  # Ctrl-C ends a watch cleanly
    assert "live updates unavailable" not in err and "Traceback" not in err


def test_quiet_prints_only_uuids(stack: Stack, home: dict[str, str]) -> None:
    login(stack, home)
    created = fplus(home, "cluster", "create", "quiet-one", "--wait", "-q").stdout.split()
    listed = fplus(home, "cluster", "list", "-q").stdout.split()
    got = fplus(home, "cluster", "get", "quiet-one", "-q").stdout.split()
    assert len(created) == 1 and created == got and created[0] in listed
    bare = json.loads(fplus(home, "cluster", "create", "bare-one", "--bare",
                            "--no-sealed-secrets", "--wait", "-o", "json").stdout)
    assert bare["spec"] == {"name": "bare-one", "namespace": "fplus-edge", "bare": True,
                            "sealedSecrets": False}
    table = fplus(home, "cluster", "list").stdout.splitlines()
    # LABELS follows once some cluster of the (shared) stack has labels
    assert table[0].split()[:6] == ["NAME", "PHASE", "SYNC", "LAST", "SEEN", "HOSTS"]
