"""Who may pull and push: Config Store credentials and grants, checked as ACS does.

Pull needs Git Pull, push needs Git Push, on the repo uuid, on the wildcard (Null uuid),
or (plural grant) on a class containing the repo. The order is 401 (no or bad
credentials) → 403 (no grant) → 404 (not configured).
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests

from fplus.config_store import uuids
from harness.servers import Api
from tests.conftest import grant
from tests.git_server.conftest import (
    ADMIN,
    Git,
    GitServer,
    Repo,
    User,
    make_repo,
    wait_for,
)

Pull, Push = uuids.GitPerm.Pull, uuids.GitPerm.Push
UPLOAD, RECEIVE = "git-upload-pack", "git-receive-pack"


def info_refs(api: Api, prefix: str, service: str) -> requests.Response:
    """``GET <prefix>/info/refs?service=<service>`` (the first request of every clone/push)."""
    return api.get(f"{prefix}/info/refs", params={"service": service})


def prefixes(repo: Repo) -> tuple[str, str]:
    return f"/uuid/{repo.uuid}", f"/git/{repo.path}"


# -- the matrix ------------------------------------------------------------------------------

Setup = Callable[[Api, str, Repo], None]


def grants(*perms: str, target: str | None = None, plural: bool = False,
           obj: bool = False, on_class: bool = False, other_repo: bool = False) -> Setup:
    """A setup granting ``perms`` on the repo (or the class, the wildcard, another repo)."""
    def setup(admin: Api, principal: str, repo: Repo) -> None:
        where = target or (repo.klass if on_class else repo.uuid)
        if other_repo:
            where = make_repo(admin).uuid  # another cluster's repo
        for perm in perms:
            grant(admin, principal, perm, where, plural=plural,
                  obj=repo.uuid if obj else None)
    return setup


def other_class(admin: Api, principal: str, repo: Repo) -> None:
    """Plural Pull+Push on a class the repo is not in."""
    grants(Pull, Push, plural=True)(admin, principal, make_repo(admin))


@dataclass(frozen=True)
class Case:
    name: str
    setup: Setup
    pull: int
    push: int


CASES = [
    Case("no grant", lambda *_: None, 403, 403),
    Case("wrong cluster: pull+push on another repo", grants(Pull, Push, other_repo=True),
         403, 403),
    Case("pull on the repo", grants(Pull), 200, 403),
    Case("push only on the repo", grants(Push), 403, 200),
    Case("pull+push on the repo", grants(Pull, Push), 200, 200),
    Case("Git permission group on the repo", grants(uuids.GitPerm.All), 200, 200),
    Case("wildcard pull+push", grants(Pull, Push, target=uuids.NULL), 200, 200),
    Case("wildcard pull only", grants(Pull, target=uuids.NULL), 200, 403),
    Case("plural grant on the repo's class", grants(Pull, Push, on_class=True, plural=True),
         200, 200),
    Case("class grant without plural", grants(Pull, Push, on_class=True), 403, 403),
    Case("plural grant on an unrelated class", other_class, 403, 403),
    Case("object-restricted grant on the repo", grants(Pull, Push, obj=True), 403, 403),
    Case("object-restricted wildcard grant", grants(Pull, Push, target=uuids.NULL, obj=True),
         403, 403),
    Case("manage storage on the repo", grants(uuids.GitPerm.ManageStorage), 403, 403),
    Case("read/write of the Git config app", grants(
        uuids.ConfigDBPerm.ReadApp, uuids.ConfigDBPerm.WriteApp,
        target=uuids.App.GitRepoConfig), 403, 403),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_acl_matrix(case: Case, admin: Api, git: Git, git_server: GitServer, repo: Repo,
                    new_user: Callable[[], User], root_git: Api, work: Path) -> None:
    user = new_user()
    case.setup(admin, user.uuid, repo)
    api = git_server.api(user.auth)
    for prefix in prefixes(repo):
        assert info_refs(api, prefix, UPLOAD).status_code == case.pull, prefix
        assert info_refs(api, prefix, RECEIVE).status_code == case.push, prefix

    url = git_server.uuid_url(repo.uuid, user.auth)
    sha = git.new_work(work / "w")
    pushed = git.push(work / "w", url, check=False)
    assert (pushed.returncode == 0) == (case.push == 200), pushed.stderr
    if case.push != 200:
        assert "403" in pushed.stderr
    status = root_git.get(f"/v1/status/{repo.uuid}").json()
    assert status == ({"main": sha} if case.push == 200 else {})

    if case.push != 200:  # give the repo content, so a clone has something to fetch
        git.push(work / "w", git_server.uuid_url(repo.uuid))
    cloned = git.clone(url, work / "c", check=False)
    assert (cloned.returncode == 0) == (case.pull == 200), cloned.stderr
    if case.pull == 200:
        assert git.head(work / "c") == sha
    else:
        assert "403" in cloned.stderr
        assert not (work / "c").exists()


# -- authentication --------------------------------------------------------------------------

def test_anonymous_gets_401_with_a_basic_challenge(git: Git, git_server: GitServer,
                                                   repo: Repo, work: Path) -> None:
    anon = git_server.api()
    for prefix in prefixes(repo):
        for service in (UPLOAD, RECEIVE):
            r = info_refs(anon, prefix, service)
            assert r.status_code == 401, (prefix, service)
            assert r.headers["WWW-Authenticate"].startswith("Basic"), r.headers
    cloned = git.clone(git_server.uuid_url(repo.uuid, None), work / "c", check=False)
    assert cloned.returncode != 0
    assert not (work / "c").exists()
    git.new_work(work / "w")
    assert git.push(work / "w", git_server.path_url(repo.path, None), check=False).returncode
    assert not git_server.bare(repo.uuid).exists()  # nothing created for an anonymous caller


@pytest.mark.parametrize("header", [
    "Basic " + base64.b64encode(b"admin:wrong-password").decode(),
    "Basic " + base64.b64encode(b"no-such-user-xyz:pw").decode(),
    "Basic !!!not-base64!!!",
    "Bearer not-a-real-token",
    "Negotiate abcdef",
])
def test_bad_credentials_get_401(header: str, git_server: GitServer, repo: Repo) -> None:
    api = git_server.api()
    api.headers["Authorization"] = header
    r = info_refs(api, f"/uuid/{repo.uuid}", UPLOAD)
    assert r.status_code == 401
    assert "WWW-Authenticate" in r.headers


def test_wrong_password_fails_the_git_cli(git: Git, git_server: GitServer, repo: Repo,
                                          new_user: Callable[[], User], admin: Api,
                                          work: Path) -> None:
    user = new_user()
    grant(admin, user.uuid, Pull, repo.uuid)
    bad = (user.auth[0], user.auth[1] + "-wrong")
    cloned = git.clone(git_server.uuid_url(repo.uuid, bad), work / "c", check=False)
    assert cloned.returncode != 0
    git.clone(git_server.uuid_url(repo.uuid, user.auth), work / "ok")


def config_store_token(config_store_url: str, auth: tuple[str, str]) -> str:
    r = requests.post(config_store_url + "/token", auth=auth, timeout=10)
    assert r.status_code == 200, r.text
    return r.json()["token"]


def test_bearer_token_from_the_config_store(git: Git, git_server: GitServer, repo: Repo,
                                            new_user: Callable[[], User], admin: Api,
                                            work: Path) -> None:
    user = new_user()
    grant(admin, user.uuid, Pull, repo.uuid)
    token = config_store_token(admin.base, user.auth)
    api = git_server.bearer(token)
    for prefix in prefixes(repo):
        r = info_refs(api, prefix, UPLOAD)
        assert r.status_code == 200, r.text
        assert r.content.startswith(b"001e# service=git-upload-pack\n")
        assert info_refs(api, prefix, RECEIVE).status_code == 403
    sha = git.new_work(work / "w")
    git.push(work / "w", git_server.uuid_url(repo.uuid))
    git.run("-c", f"http.extraHeader=Authorization: Bearer {token}", "clone", "--quiet",
            git_server.uuid_url(repo.uuid, None), str(work / "c"))
    assert git.head(work / "c") == sha


def test_root_bearer_token_is_root(git_server: GitServer, repo: Repo, admin: Api) -> None:
    api = git_server.bearer(config_store_token(admin.base, ADMIN))
    assert info_refs(api, f"/uuid/{repo.uuid}", RECEIVE).status_code == 200
    assert api.get("/v1/storage").status_code == 200


# -- revocation ------------------------------------------------------------------------------

def test_revoked_grant_stops_working_within_the_cache_time(
        git: Git, git_server: GitServer, repo: Repo, new_user: Callable[[], User],
        admin: Api, work: Path) -> None:
    user = new_user()
    pull = grant(admin, user.uuid, Pull, repo.uuid)
    push = grant(admin, user.uuid, Push, repo.uuid)
    url = git_server.uuid_url(repo.uuid, user.auth)
    git.new_work(work / "w")
    git.push(work / "w", url)
    api = git_server.api(user.auth)
    prefix = f"/uuid/{repo.uuid}"
    assert info_refs(api, prefix, RECEIVE).status_code == 200

    assert admin.delete(f"/v2/grant/{push}").status_code == 204
    r = wait_for(lambda: info_refs(api, prefix, RECEIVE), lambda r: r.status_code == 403, 3)
    assert r.status_code == 403
    assert info_refs(api, prefix, UPLOAD).status_code == 200
    git.commit_file(work / "w", "more", "x\n")
    assert "403" in git.push(work / "w", url, check=False).stderr

    assert admin.delete(f"/v2/grant/{pull}").status_code == 204
    r = wait_for(lambda: info_refs(api, prefix, UPLOAD), lambda r: r.status_code == 403, 3)
    assert r.status_code == 403
    assert git.clone(url, work / "c", check=False).returncode != 0

    grant(admin, user.uuid, Pull, repo.uuid)  # and granting again works again
    r = wait_for(lambda: info_refs(api, prefix, UPLOAD), lambda r: r.status_code == 200, 3)
    assert r.status_code == 200


def test_deleted_principal_is_refused(git_server: GitServer, repo: Repo,
                                      new_user: Callable[[], User], admin: Api) -> None:
    user = new_user()
    grant(admin, user.uuid, Pull, repo.uuid)
    api = git_server.api(user.auth)
    assert info_refs(api, f"/uuid/{repo.uuid}", UPLOAD).status_code == 200
    assert admin.delete(f"/v2/principal/{user.uuid}").status_code == 204
    r = wait_for(lambda: info_refs(api, f"/uuid/{repo.uuid}", UPLOAD),
                 lambda r: r.status_code == 401, 3)
    assert r.status_code == 401


# -- existence after the ACL -----------------------------------------------------------------

def test_unconfigured_repo_is_404_for_an_authorised_caller(
        git: Git, git_server: GitServer, admin: Api, root_git: Api,
        new_user: Callable[[], User], work: Path) -> None:
    repo = make_repo(admin, configured=False)
    for service in (UPLOAD, RECEIVE):
        r = info_refs(root_git, f"/uuid/{repo.uuid}", service)
        assert r.status_code == 404, r.text
    user = new_user()
    grant(admin, user.uuid, Pull, repo.uuid)
    assert info_refs(git_server.api(user.auth), f"/uuid/{repo.uuid}", UPLOAD).status_code == 404
    cloned = git.clone(git_server.uuid_url(repo.uuid), work / "c", check=False)
    assert cloned.returncode != 0 and "not found" in cloned.stderr
    assert root_git.get(f"/v1/status/{repo.uuid}").status_code == 404
    assert not git_server.bare(repo.uuid).exists()  # no storage for an unconfigured repo


def test_acl_is_checked_before_existence(git_server: GitServer, admin: Api,
                                         new_user: Callable[[], User]) -> None:
    """As ACS: a caller without the grant cannot tell configured from unconfigured repos."""
    unconfigured = make_repo(admin, configured=False)
    never_made = "0f5a4b6c-1d2e-4f30-8a1b-2c3d4e5f6a7b"
    api = git_server.api(new_user().auth)
    for target in (unconfigured.uuid, never_made):
        for service in (UPLOAD, RECEIVE):
            assert info_refs(api, f"/uuid/{target}", service).status_code == 403
    assert info_refs(git_server.api(ADMIN), f"/uuid/{never_made}", UPLOAD).status_code == 404


def test_unknown_path_is_not_revealed_to_a_caller_without_grants(
        git_server: GitServer, repo: Repo, new_user: Callable[[], User]) -> None:
    """``/git/<group>/<name>`` must not tell an ungranted caller which paths exist.

    ACS resolves an unknown path to ``/uuid/undefined`` (⇒ 403 for anyone but root);
    answering 404 for unknown paths and 403 for known ones leaks every configured
    ``group/name`` (e.g. cluster names) to any principal.
    """
    api = git_server.api(new_user().auth)
    known = info_refs(api, f"/git/{repo.path}", UPLOAD)
    unknown = info_refs(api, "/git/tests/no-such-repo-anywhere", UPLOAD)
    assert known.status_code == 403
    assert unknown.status_code == known.status_code


def test_unknown_path_is_404_for_root(git_server: GitServer, root_git: Api) -> None:
    assert info_refs(root_git, "/git/tests/no-such-repo-anywhere", UPLOAD).status_code == 404


@pytest.mark.parametrize("bad", [
    "not-a-uuid", "D0C5A3E1-0000-4000-8000-000000000000", "0000", "%2e%2e",
    "d0c5a3e1-0000-4000-8000-00000000000g",
])
def test_malformed_repo_uuid_is_410(bad: str, root_git: Api) -> None:
    r = info_refs(root_git, f"/uuid/{bad}", UPLOAD)
    assert r.status_code == 410, r.text


def test_push_is_checked_whatever_the_query_says(git_server: GitServer, repo: Repo,
                                                 new_user: Callable[[], User],
                                                 admin: Api) -> None:
    """The permission checked must be the one of the service http-backend runs.

    ``git http-backend`` takes the *last* ``service`` parameter; the server must not
    check Pull on the first one and let receive-pack through.
    """
    user = new_user()
    grant(admin, user.uuid, Pull, repo.uuid)
    api = git_server.api(user.auth)
    r = api.get(f"/uuid/{repo.uuid}/info/refs?service={UPLOAD}&service={RECEIVE}")
    assert not (r.status_code == 200 and "receive-pack" in r.headers.get("Content-Type", "")), (
        f"a Pull-only caller got a receive-pack advertisement: {r.status_code} "
        f"{r.headers.get('Content-Type')}")
    r = api.post(f"/uuid/{repo.uuid}/git-receive-pack", params={"service": UPLOAD},
                 data=b"0000", headers={"Content-Type": "application/x-git-receive-pack-request"})
    assert r.status_code == 403
