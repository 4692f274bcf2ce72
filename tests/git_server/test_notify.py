"""notify/v2 on the Git server: WATCH of the status URLs over a real WebSocket.

The expected shapes are upstream's (ACS ``acs-git/lib/notify.js``: ``/v1/status/`` is the
configured repo uuids, ``/v1/status/:uuid`` the ``{branch: sha}`` of one repo or 404; updates
``{status: 201 | 200, response: {status, body?}}``), with the HTTP routes' permission rules:
the list filtered by Git Pull, a repo 403 without it. Subscription replies (410 on CLOSE, 404
for a URL not served, 400, 429) are ``lib/js-service-api/lib/notify-v2.js``'s.
"""

from __future__ import annotations

import signal
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests

from fplus.config_store import uuids
from harness.servers import Api, ConfigStoreProcess, ServiceProcess
from tests.config_store.notify_helpers import (
    RECV_TIMEOUT,
    RawNotify,
    get_token,
    handshake,
    read_close,
)
from tests.conftest import grant, make_user
from tests.git_server.conftest import (
    ADMIN,
    Git,
    GitServer,
    Repo,
    User,
    configure,
    make_repo,
    wait_for,
)

Pull = uuids.GitPerm.Pull
LIST = "v1/status/"  # acs-git/lib/notify.js: notify.watch("/v1/status/", …), and /:uuid


def repo_url(repo: str) -> str:
    return f"v1/status/{repo}"


def known(root_git: Api, repo: str) -> None:
    """Wait until the Git server's registry has ``repo`` (its list shows it to root)."""
    r = wait_for(lambda: root_git.get("/v1/status"), lambda r: repo in r.json())
    assert repo in r.json(), f"the Git server never learnt of {repo}"


def until(session: RawNotify, sub: str, done: Callable[[dict[str, Any]], bool]) -> dict:
    """The first update of ``sub`` for which ``done`` holds (earlier ones are skipped)."""
    while True:
        update = session.next(sub)
        if done(update):
            return update


@pytest.fixture
def root_notify(git_server: GitServer, admin: Api) -> Iterator[RawNotify]:
    """A notify/v2 session on the Git server as the root principal."""
    with RawNotify(git_server.url, get_token(admin)) as session:
        yield session


def user_notify(git_server: GitServer, config_store: ConfigStoreProcess,
                user: User) -> RawNotify:
    return RawNotify(git_server.url, get_token(Api(config_store.url, user.auth)))


def test_plain_get_is_refused_with_426(git_server: GitServer) -> None:
    r = requests.get(git_server.url + "/notify/v2", timeout=10)
    assert r.status_code == 426
    assert r.json() == {"error": "notify/v2 is a WebSocket endpoint"}


def test_list_watch_starts_with_201_then_follows_new_repos(
        root_notify: RawNotify, admin: Api, root_git: Api) -> None:
    known(root_git, make_repo(admin).uuid)
    sub = root_notify.watch(LIST)
    first = root_notify.next(sub)
    assert (first["status"], first["uuid"], first["response"]["status"]) == (201, sub, 200)
    listed = first["response"]["body"]
    assert isinstance(listed, list) and listed == sorted(listed) and listed

    new = make_repo(admin)
    assert new.uuid not in listed
    update = until(root_notify, sub, lambda u: new.uuid in u["response"]["body"])
    assert update["status"] == 200 and update["response"]["status"] == 200
    assert update["response"]["body"] == sorted(update["response"]["body"])


def test_repo_watch_shows_the_branch_of_a_push(
        root_notify: RawNotify, git: Git, git_server: GitServer, repo: Repo, work: Path,
        root_git: Api) -> None:
    known(root_git, repo.uuid)
    sub = root_notify.watch(repo_url(repo.uuid))
    assert root_notify.next(sub) == {"status": 201, "uuid": sub,
                                     "response": {"status": 200, "body": {}}}

    sha = git.new_work(work / "w")
    git.push(work / "w", git_server.uuid_url(repo.uuid))
    assert root_notify.next(sub) == {"status": 200, "uuid": sub,
                                     "response": {"status": 200, "body": {"main": sha}}}
    assert root_git.get(f"/v1/status/{repo.uuid}").json() == {"main": sha}

    second = git.commit_file(work / "w", "b.txt", "b\n")
    git.push(work / "w", git_server.uuid_url(repo.uuid))
    update = root_notify.next(sub)
    assert update["response"] == {"status": 200, "body": {"main": second}}
    root_notify.assert_quiet(sub, timeout=1.5)  # the same answer again is not sent


def test_unknown_repo_is_404_until_configured(
        root_notify: RawNotify, admin: Api, root_git: Api) -> None:
    repo = make_repo(admin, configured=False)
    sub = root_notify.watch(repo_url(repo.uuid))
    assert root_notify.next(sub) == {"status": 201, "uuid": sub, "response": {"status": 404}}
    root_notify.assert_quiet(sub, timeout=1.5)  # polled every second, unchanged

    configure(admin, repo.uuid, repo.path)
    assert root_notify.next(sub) == {"status": 200, "uuid": sub,
                                     "response": {"status": 200, "body": {}}}


def test_a_head_watch_has_no_body(root_notify: RawNotify) -> None:
    sub = root_notify.watch(LIST, method="HEAD")
    assert root_notify.next(sub) == {"status": 201, "uuid": sub, "response": {"status": 200}}


def test_a_malformed_repo_uuid_answers_as_http(root_notify: RawNotify, root_git: Api) -> None:
    assert root_git.get("/v1/status/not-a-uuid").status_code == 410
    sub = root_notify.watch(repo_url("not-a-uuid"))
    assert root_notify.next(sub) == {"status": 201, "uuid": sub, "response": {"status": 410}}


def test_without_pull_the_repo_is_403_and_the_list_filtered(
        git_server: GitServer, config_store: ConfigStoreProcess, admin: Api, root_git: Api,
        new_user: Callable[[], User]) -> None:
    user = new_user()
    repo, unconfigured = make_repo(admin), make_repo(admin, configured=False)
    known(root_git, repo.uuid)
    assert git_server.api(user.auth).get(f"/v1/status/{repo.uuid}").status_code == 403
    with user_notify(git_server, config_store, user) as session:
        mine = session.watch(repo_url(repo.uuid))
        assert session.next(mine)["response"] == {"status": 403}
        other = session.watch(repo_url(unconfigured.uuid))  # 403 before existence is told
        assert session.next(other)["response"] == {"status": 403}
        listing = session.watch(LIST)
        assert session.next(listing)["response"] == {"status": 200, "body": []}

        grant(admin, user.uuid, Pull, repo.uuid)  # re-checked for every update
        assert session.next(mine) == {"status": 200, "uuid": mine,
                                      "response": {"status": 200, "body": {}}}
        assert session.next(listing)["response"] == {"status": 200, "body": [repo.uuid]}
        session.assert_quiet(other, timeout=1.5)


def test_close_answers_410_and_ends_the_subscription(
        root_notify: RawNotify, admin: Api) -> None:
    closed, kept = root_notify.watch(LIST), root_notify.watch(LIST)
    assert root_notify.next(closed)["status"] == 201
    assert root_notify.next(kept)["status"] == 201
    root_notify.close_sub(closed)
    assert root_notify.next(closed) == {"status": 410, "uuid": closed}

    new = make_repo(admin)
    until(root_notify, kept, lambda u: new.uuid in u["response"]["body"])
    root_notify.assert_quiet(closed)


@pytest.mark.parametrize(("first", "answer"), [
    ("hello", "400"),
    ("Bearer", "400"),
    ("Bearer bm90LWEtdG9rZW4=", "401"),
])
def test_a_bad_first_message_closes_with_1008(git_server: GitServer, first: str,
                                              answer: str) -> None:
    ws, reply = handshake(git_server.url, first)
    try:
        assert reply == answer
        code, _ = read_close(ws)
        assert code == 1008
    finally:
        ws.close()


@pytest.mark.parametrize("url", ["v2/app/x/object/", "v1/status/a/b", "v1/storage", ""])
def test_an_unknown_watch_url_is_404(root_notify: RawNotify, url: str) -> None:
    sub = root_notify.watch(url)
    assert root_notify.next(sub) == {"status": 404, "uuid": sub}


@pytest.mark.parametrize("request_", [
    {"method": "WATCH"},
    {"method": "WATCH", "request": {"url": LIST, "method": "POST"}},
    {"method": "FETCH", "request": {"url": LIST}},
])
def test_a_malformed_request_is_400(root_notify: RawNotify, request_: dict) -> None:
    root_notify.send({"uuid": "0c5b1f10-5a0e-4a43-8a70-2b7f3a8c1d11", **request_})
    assert root_notify.next("0c5b1f10-5a0e-4a43-8a70-2b7f3a8c1d11")["status"] == 400


def test_subscriptions_are_capped_per_connection(root_notify: RawNotify) -> None:
    subs = [root_notify.watch(LIST) for _ in range(100)]
    for sub in subs:
        assert root_notify.next(sub)["status"] == 201
    over = root_notify.watch(LIST)
    reply = root_notify.next(over)
    assert reply["status"] == 429 and "100" in reply["error"]


@dataclass(frozen=True)
class Own:
    """A Config Store and a Git server of this module's own (a second Git server on the
    session's store would seed its principal again and lock the first one out)."""

    admin: Api
    git: GitServer


@pytest.fixture(scope="module")
def slow_refresh(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Own]:
    """Watches refreshed only when a change is signalled (the fallback every 60 s), notify
    tokens re-checked every second."""
    base = tmp_path_factory.mktemp("git-notify")
    store = ConfigStoreProcess(base / "cs").start()
    proc = ServiceProcess(base / "git", module="fplus.git_server.cli", admin_password=None,
                          seed_from=store.url,
                          extra_args=("--config-store", store.url, "--acl-cache-seconds", "0.5",
                                      "--notify-refresh-seconds", "60",
                                      "--notify-recheck-seconds", "1"))
    try:
        proc.start()
        yield Own(Api(store.url, ADMIN), GitServer(proc, base / "git"))
    finally:
        proc.stop(signal.SIGKILL)
        store.stop(signal.SIGKILL)


def test_pushes_and_configured_repos_are_signalled(
        slow_refresh: Own, git: Git, work: Path) -> None:
    """Without the one-second fallback, updates still follow at once."""
    admin, server = slow_refresh.admin, slow_refresh.git
    with RawNotify(server.url, get_token(admin)) as session:
        listing = session.watch(LIST)
        assert session.next(listing)["status"] == 201
        repo = make_repo(admin)
        until(session, listing, lambda u: repo.uuid in u["response"]["body"])
        sub = session.watch(repo_url(repo.uuid))
        assert session.next(sub)["response"] == {"status": 200, "body": {}}
        sha = git.new_work(work / "w")
        git.push(work / "w", server.uuid_url(repo.uuid))
        assert session.next(sub)["response"] == {"status": 200, "body": {"main": sha}}


def test_a_revoked_token_closes_the_connection_with_1008(slow_refresh: Own) -> None:
    admin, url = slow_refresh.admin, slow_refresh.git.url
    user, api = make_user(admin)
    session, bystander = RawNotify(url, get_token(api)), RawNotify(url, get_token(admin))
    try:
        sub = session.watch(LIST)
        assert session.next(sub)["status"] == 201
        assert admin.delete(f"/v2/principal/{user}").status_code == 204
        code, reason = read_close(session.ws, timeout=RECV_TIMEOUT)
        assert (code, reason) == (1008, "notify: credentials revoked or expired")
        assert not bystander.is_closed_by_server(timeout=1.5)  # root's session stays open
    finally:
        session.close()
        bystander.close()
