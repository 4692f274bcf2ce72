"""``fplus cluster list`` as the fleet view on a terminal: by name, ``--search``, ``--sync``
and ``--phase`` (any case) combined, the SYNC, LAST SEEN (an age) and ERROR columns, and
``--limit``/``--after`` paging through the cursor stderr names."""

from __future__ import annotations

import json
import re
import uuid
from datetime import UTC, datetime

import pytest

from fplus.config_store import uuids
from harness.stack import Stack, create_cluster, status, wait_for
from tests.cluster_manager.api.test_cluster_list import _flux, seed_failing
from tests.fplus_cli.test_journey import fplus, login

FAILING = 8
NEXT = re.compile(r"^(\d+) match; next page: --limit (\d+) --after (\S+)$")


@pytest.fixture(scope="module")
def stack(shared_stack: Stack) -> Stack:
    """The session's stack: these tests only add and look at clusters of their own."""
    return shared_stack


@pytest.fixture(scope="module")
def fleet(stack: Stack) -> tuple[str, str, list[str]]:
    """A tag, the uuid of its one Online and Synced cluster, and every name carrying it."""
    tag = "cl" + uuid.uuid4().hex[:6]
    online = create_cluster(stack.admin, f"{tag}-online")
    failed = seed_failing(stack, [f"{tag}-f{i}" for i in range(FAILING)])
    setup = wait_for(lambda: (s := status(stack.admin, online)) and s.get("ready") and s,
                     what="ready")
    r = stack.admin.patch(
        f"/v2/app/{uuids.App.EdgeClusterStatus}/object/{online}",
        json={"lastSeen": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
              "appliedCommit": setup["commit"], "flux": _flux("True", "True")},
        headers={"Content-Type": "application/merge-patch+json"})
    assert r.status_code == 204, r.text
    return tag, online, sorted([f"{tag}-online", *failed.values()])


def test_filters_combine_in_name_order(stack: Stack, home: dict[str, str],
                                       fleet: tuple[str, str, list[str]]) -> None:
    login(stack, home)
    tag, online, names = fleet
    listed = json.loads(fplus(home, "cluster", "list", "--search", tag.upper(), "-o", "json")
                        .stdout)
    assert [c["name"] for c in listed] == names
    synced = json.loads(fplus(home, "cluster", "list", "-s", tag, "--sync", "sYnCeD", "-o",
                              "json").stdout)
    assert [(c["uuid"], c["phase"], c["syncState"]) for c in synced] == [
        (online, "Online", "Synced")]
    failed = fplus(home, "cluster", "list", "-s", tag, "--phase", "failed", "--sync",
                   "unknown", "-q").stdout.split()
    assert len(failed) == FAILING and online not in failed
    assert "sync must be one of" in fplus(home, "cluster", "list", "--sync", "sideways",
                                          expect=1).stderr


def test_the_table_shows_sync_an_age_and_the_error(stack: Stack, home: dict[str, str],
                                                   fleet: tuple[str, str, list[str]]) -> None:
    login(stack, home)
    tag, _, names = fleet
    table = fplus(home, "cluster", "list", "-s", tag).stdout.splitlines()
    assert table[0].split() == ["NAME", "PHASE", "SYNC", "LAST", "SEEN", "HOSTS", "ERROR"]
    rows = {line.split()[0]: line for line in table[2:] if line.strip()}  # [1]: the rule
    assert sorted(rows) == names
    assert re.search(r"Online\s+Synced\s+(\d+s ago|just now)\s", rows[f"{tag}-online"]), \
        rows[f"{tag}-online"]
    assert all("Failed" in rows[n] and "Unknown" in rows[n] and "unknown chart" in rows[n]
               for n in names if n != f"{tag}-online")


def test_limit_pages_through_the_cursor_stderr_names(stack: Stack, home: dict[str, str],
                                                     fleet: tuple[str, str, list[str]]
                                                     ) -> None:
    login(stack, home)
    tag, _, names = fleet
    seen: list[str] = []
    args = ["cluster", "list", "-s", tag, "--limit", "3", "-o", "json"]
    after: list[str] = []
    while True:
        done = fplus(home, *args, *after)
        page = [c["name"] for c in json.loads(done.stdout)]
        assert 1 <= len(page) <= 3
        seen += page
        said = done.stderr.strip()
        if not said:
            break
        match = NEXT.match(said)
        assert match and match[1] == str(len(names)) and match[2] == "3", said
        after = ["--after", match[3]]
    assert seen == names
    assert "--after needs --limit" in fplus(home, "cluster", "list", "--after", "x",
                                            expect=2).stderr
