"""``fplus window set|list|get|delete`` (the console script, in a child process) against a
real stack: a window set from options, replaced from a YAML file with an option over it,
listed and read by name and UUID, deleted; refusals (exit 1 or 2) write nothing."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from fplus.config_store import uuids
from harness.stack import Stack
from tests.fplus_cli.test_journey import fplus, login

WINDOWS = uuids.App.MaintenanceWindow


@pytest.fixture
def stack(shared_stack: Stack) -> Stack:
    """The session's stack: each window here matches only a site label of its own."""
    return shared_stack


def stored(stack: Stack) -> object:
    return stack.admin.get(f"/v2/app/{WINDOWS}/object").json()


def test_set_list_get_delete(stack: Stack, home: dict[str, str], tmp_path: Path) -> None:
    login(stack, home)
    site, name = f"s{uuid.uuid4().hex[:8]}", f"w-{uuid.uuid4().hex[:8]}"
    made = json.loads(fplus(home, "window", "set", name, "-l", f"site={site},tier in (a,b)",
                            "--schedule", "0 22 * * 1-5", "--duration", "4h",
                            "--time-zone", "Europe/London", "-o", "json").stdout)
    entry = stack.admin.get(f"/v2/app/{WINDOWS}/object/{made['uuid']}").json()
    assert entry == {"name": name, "schedule": "0 22 * * 1-5", "duration": 14400,
                     "timeZone": "Europe/London", "selector": {
                         "matchLabels": {"site": site},
                         "matchExpressions": [{"key": "tier", "operator": "In",
                                               "values": ["a", "b"]}]}}

    table = fplus(home, "window", "list", "--no-headers").stdout
    row = next((line for line in table.splitlines() if line.split()[0] == name), None)
    assert row is not None, table
    assert f"site={site},tier in (a,b)" in row and "Europe/London" in row and "4h" in row

    body = tmp_path / "window.yaml"
    body.write_text(f"selector: {{matchLabels: {{site: {site}}}}}\nschedule: '* * * * *'\n"
                    "duration: 60\ntimeZone: Asia/Tokyo\n")
    fplus(home, "window", "set", name, "-f", str(body), "--duration", "1h30m")
    got = json.loads(fplus(home, "window", "get", made["uuid"], "-o", "json").stdout)
    assert (got["uuid"], got["schedule"], got["duration"], got["timeZone"], got["open"]) == (
        made["uuid"], "* * * * *", 5400, "Asia/Tokyo", True)
    shown = fplus(home, "window", "get", name).stdout
    assert "open now" in shown and "1h30m" in shown and f"site={site}" in shown

    fplus(home, "window", "delete", name)
    assert made["uuid"] not in stored(stack)
    assert "no maintenance window" in fplus(home, "window", "get", name, expect=1).stderr


def test_refusals_write_nothing(stack: Stack, home: dict[str, str]) -> None:
    login(stack, home)
    before = stored(stack)
    name = f"w-{uuid.uuid4().hex[:8]}"
    refused = fplus(home, "window", "set", name, "-l", "site=x", "--schedule", "0 22 * *",
                    "--duration", "4h", expect=1).stderr
    assert "schedule" in refused and "cron" in refused
    refused = fplus(home, "window", "set", name, "-l", "site=x", "--schedule", "0 22 * * *",
                    "--duration", "4h", "--time-zone", "Mars/Olympus", expect=1).stderr
    assert "timeZone" in refused
    assert "--duration" in fplus(home, "window", "set", name, "-l", "site=x",
                                 "--schedule", "0 22 * * *", expect=2).stderr
    assert "--selector" in fplus(home, "window", "set", name, "-l", "site in x",
                                 "--schedule", "0 22 * * *", "--duration", "4h",
                                 expect=2).stderr
    refused = fplus(home, "window", "set", "Not_A_Name", "-l", "site=x",
                    "--schedule", "0 22 * * *", "--duration", "4h", expect=1).stderr
    assert "name" in refused
    assert stored(stack) == before
