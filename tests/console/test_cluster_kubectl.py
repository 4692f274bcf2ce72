"""The cluster page's tunnel and kubectl command: the state of the edge's tunnel and since
when (connected, down since, never connected; unknown where the Cluster Manager reports
none), and the `fplus cluster kubeconfig` command to copy, shell-quoted, with the level the
user's grants give them there; a user with no such grant is told so, without the command.
On the page a real stack serves, outside the browser (the page is rendered by the server)."""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any

import pytest

from fplus.cluster_manager._http.console import pages
from harness.servers import ADMIN_PASSWORD
from harness.stack import Stack, create_cluster
from tests.console.conftest import READER_PASSWORD, Reader, console_session
from tests.console.test_browser import Page

UNKNOWN = {"state": "unknown", "text": "this Cluster Manager reports no tunnel state"}


@pytest.mark.parametrize(("status", "expected"), [
    ({"tunnel": {"state": "connected", "since": "2030-01-01T00:00:00Z"}},
     {"state": "connected", "text": "since 2030-01-01T00:00:00Z"}),
    ({"tunnel": {"state": "down", "since": "2030-01-02T00:00:00Z"}},
     {"state": "down", "text": "since 2030-01-02T00:00:00Z"}),
    ({"tunnel": {"state": "down", "since": None}}, {"state": "down", "text": "never connected"}),
    ({"tunnel": {"state": 7}}, UNKNOWN),
    ({"tunnel": "connected"}, UNKNOWN),
    ({}, UNKNOWN),
], ids=["connected", "down", "never", "nonsense", "not-an-object", "no-tunnels"])
def test_the_tunnel_is_shown_with_since_when(status: dict[str, object],
                                             expected: dict[str, str]) -> None:
    assert pages.tunnel_view(status) == expected


def test_the_command_is_quoted_for_a_shell() -> None:
    assert pages.kubeconfig_command("line-2") == (
        "fplus cluster kubeconfig line-2 -o line-2.kubeconfig")
    assert pages.kubeconfig_command("a b'c") == (
        "fplus cluster kubeconfig 'a b'\"'\"'c' -o 'a b'\"'\"'c.kubeconfig'")


def test_the_cluster_page_shows_the_tunnel_and_the_command(stack: Stack, reader: Reader
                                                          ) -> None:
    cluster = create_cluster(stack.admin, "kubectl-page-edge")
    session, _ = console_session(stack)
    page = session.get(f"{stack.manager.url}/ui/cluster/{cluster}").text
    found = re.search(r'<dd id="tunnel" data-state="(\w+)">(.*?)</dd>', page)
    assert found, page[:2000]
    state, shown = found.groups()
    text = " ".join(html.unescape(re.sub(r"<[^>]+>", "", shown)).split())
    assert (state, text) == ("down", "Down never connected")  # a new cluster's edge
    assert 'id="tunnel-down"' in page
    command = "fplus cluster kubeconfig kubectl-page-edge -o kubectl-page-edge.kubeconfig"
    assert f'<code id="kubeconfig-command">{command}</code>' in page
    assert 'data-copy="kubeconfig-command"' in page
    assert '<strong id="kube-level">admin</strong>' in page  # the root principal

    theirs, _ = console_session(stack, reader.name, READER_PASSWORD)  # sees, may not reach
    seen = theirs.get(f"{stack.manager.url}/ui/cluster/{cluster}").text
    assert 'id="no-kube-grant"' in seen and 'id="tunnel"' in seen
    assert "kubeconfig-command" not in seen


def test_the_command_is_copied_in_chromium(stack: Stack, browser: Any, tmp_path: Path) -> None:
    cluster = create_cluster(stack.admin, "kubectl-copy-edge")
    page = Page(browser, stack.manager.url, tmp_path / "screenshots")
    page.sign_in("admin", ADMIN_PASSWORD)
    page.open(f"/ui/cluster/{cluster}")
    page.text_is("#tunnel", "Down never connected")
    page.click("#copy-kubeconfig")
    page.text_is("#kubeconfig-copy-status", "Copied")  # its own status, not the bootstrap's
    assert page.find("#copy-kubeconfig").get_attribute("data-copied") == (
        "fplus cluster kubeconfig kubectl-copy-edge -o kubectl-copy-edge.kubeconfig")
    page.shot("kubectl-card")
