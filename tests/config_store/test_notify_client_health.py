"""The notify client says why a subscription is not following the Config Store (``problem``),
so a service can report it (the Cluster Manager's ``/healthz``) instead of claiming to be synced.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import pytest

from fplus.config_store.client import ConfigStoreClient, NotifyClient, Subscription
from harness.servers import ADMIN_PASSWORD, Api, ConfigStoreProcess, free_port
from tests.conftest import make_user


def _client(url: str, auth: tuple[str, str] = ("admin", ADMIN_PASSWORD)) -> ConfigStoreClient:
    return ConfigStoreClient(url, *auth, retries=0, backoff=0.05)


@pytest.fixture
def notify(config_store: ConfigStoreProcess) -> Iterator[NotifyClient]:
    with _client(config_store.url) as cs, NotifyClient(cs, reconnect_delay=(0.2, 0.4)) as nc:
        yield nc


def _until(check: Callable[[], object], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def _answered(sub: Subscription) -> None:
    assert sub.wait_initial(10)


def test_a_live_search_has_no_problem(notify: NotifyClient, new_app: str) -> None:
    sub = notify.search(new_app, lambda state: None)
    _answered(sub)
    assert sub.live and not sub.refused and sub.problem is None


def test_a_subscription_the_server_ended_says_so(notify: NotifyClient) -> None:
    sub = notify.watch_url("v2/no/such/thing", lambda value: None)
    _answered(sub)
    assert sub.ended and not sub.live
    assert sub.problem == "the Config Store ended the WATCH (status 404)"


def test_a_search_without_read_access_is_refused(config_store: ConfigStoreProcess, admin: Api,
                                                 new_app: str) -> None:
    _, user = make_user(admin)
    assert user.auth is not None
    with _client(config_store.url, user.auth) as cs, NotifyClient(cs) as nc:
        sub = nc.search(new_app, lambda state: None)
        _answered(sub)
        assert sub.refused
        assert sub.problem == "the Config Store refuses the SEARCH (no read access)"


def test_no_connection_is_a_problem_with_its_reason() -> None:
    with _client(f"http://127.0.0.1:{free_port()}") as cs, \
            NotifyClient(cs, reconnect_delay=(0.2, 0.4)) as nc:
        sub = nc.search("00000000-0000-4000-8000-000000000001", lambda state: None)
        _until(lambda: "Connection" in (sub.problem or ""))
        problem = sub.problem or ""
        assert problem.startswith("not connected to notify/v2: ") and not sub.live, problem
