"""A stack and a headless Chromium (Debian's ``chromium`` through its ``chromedriver``)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests

from fplus.config_store import uuids
from harness.browser import headless_chromium
from harness.central import import_chart
from harness.servers import ADMIN_PASSWORD, Api
from harness.stack import Stack
from tests.conftest import grant, make_user

READER_PASSWORD = "reader-" + "p" * 10
CHARTS = ("mqtt-broker", "historian")
"""The charts the console tests' chart templates name."""


@dataclass
class Reader:
    """A principal that may read the setup status app and nothing else."""

    name: str
    uuid: str


@pytest.fixture(scope="session")
def stack(shared_stack: Stack) -> Stack:
    """The session's stack (the console tests only add and look at objects of their own),
    with the charts their chart templates name in the shared charts repo (a deployment of a
    chart the repo lacks is refused)."""
    root = Api(shared_stack.manager.url, ("admin", ADMIN_PASSWORD))
    for chart in CHARTS:
        import_chart(root, chart)
    return shared_stack


@pytest.fixture(scope="session")
def reader(stack: Stack) -> Reader:
    uid, session = make_user(stack.admin, password=READER_PASSWORD)
    grant(stack.admin, uid, uuids.ConfigDBPerm.ReadApp, uuids.App.EdgeClusterSetupStatus)
    return Reader(session.auth[0], uid)


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[object]:
    """A fresh headless Chromium profile per test."""
    with headless_chromium(tmp_path) as driver:
        yield driver


def cluster_names(stack: Stack) -> list[str]:
    """The names in every Edge cluster configuration entry."""
    app = uuids.App.EdgeClusterConfiguration
    objects = stack.admin.get(f"/v2/app/{app}/object").json()
    return [stack.admin.get(f"/v2/app/{app}/object/{obj}").json().get("name") for obj in objects]


def console_session(stack: Stack, user: str = "admin",
                    password: str = ADMIN_PASSWORD) -> tuple[requests.Session, str]:
    """A signed-in console session outside the browser, and a page of it to read tokens from."""
    session = requests.Session()
    r = session.post(f"{stack.manager.url}/ui/login",
                     data={"username": user, "password": password}, allow_redirects=True)
    assert r.status_code == 200 and "Sign out" in r.text, r.text[:500]
    return session, r.text


__all__ = ["READER_PASSWORD", "Reader", "cluster_names", "console_session"]
