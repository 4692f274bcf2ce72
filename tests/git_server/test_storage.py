"""A repo exists while its config entry does; its storage only goes by the admin route."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from fplus.config_store import uuids
from harness.servers import Api
from tests.conftest import grant
from tests.git_server.conftest import (
    Git,
    GitServer,
    Repo,
    User,
    configure,
    make_repo,
    unconfigure,
    wait_for,
)

UNKNOWN = "3c1f0e2d-5b4a-4c3d-9e8f-7a6b5c4d3e2f"


def refs_status(api: Api, prefix: str) -> int:
    return api.get(f"{prefix}/info/refs", params={"service": "git-upload-pack"}).status_code


def push_one(git: Git, server: GitServer, repo: Repo, work: Path, name: str = "w") -> str:
    sha = git.new_work(work / name, {f"{name}.txt": f"{name}\n"})
    git.push(work / name, server.uuid_url(repo.uuid))
    return sha


def stored(api: Api) -> list[str]:
    r = api.get("/v1/storage")
    assert r.status_code == 200, r.text
    return r.json()


def test_deleting_the_config_entry_hides_the_repo_and_keeps_storage(
        git: Git, git_server: GitServer, repo: Repo, admin: Api, root_git: Api,
        work: Path) -> None:
    sha = push_one(git, git_server, repo, work)
    listed = wait_for(lambda: root_git.get("/v1/status").json(), lambda v: repo.uuid in v)
    assert repo.uuid in listed
    unconfigure(admin, repo.uuid)

    for prefix in (f"/uuid/{repo.uuid}", f"/git/{repo.path}"):
        code = wait_for(lambda p=prefix: refs_status(root_git, p), lambda c: c == 404, 3)
        assert code == 404, prefix
    assert git.clone(git_server.uuid_url(repo.uuid), work / "c", check=False).returncode != 0
    assert root_git.get(f"/v1/status/{repo.uuid}").status_code == 404
    listed = wait_for(lambda: root_git.get("/v1/status").json(), lambda v: repo.uuid not in v, 3)
    assert repo.uuid not in listed
    # storage is untouched
    assert repo.uuid in stored(root_git)
    assert (git_server.bare(repo.uuid) / "HEAD").exists()

    # configured again (at a new path): the old content is back
    new_path = repo.path + "-again"
    configure(admin, repo.uuid, new_path)
    code = wait_for(lambda: refs_status(root_git, f"/git/{new_path}"), lambda c: c == 200, 3)
    assert code == 200
    git.clone(git_server.path_url(new_path), work / "again")
    assert git.head(work / "again") == sha
    assert root_git.get(f"/v1/status/{repo.uuid}").json() == {"main": sha}


def test_storage_delete_archives_and_a_new_config_starts_empty(
        git: Git, git_server: GitServer, repo: Repo, admin: Api, root_git: Api,
        work: Path) -> None:
    sha = push_one(git, git_server, repo, work)
    unconfigure(admin, repo.uuid)
    assert repo.uuid in stored(root_git)

    r = root_git.delete(f"/v1/storage/{repo.uuid}")
    assert r.status_code == 204, r.text
    assert repo.uuid not in stored(root_git)
    assert not git_server.bare(repo.uuid).exists()
    archived = sorted(git_server.archive.glob(f"{repo.uuid}*"))
    assert len(archived) == 1
    assert git.run("--git-dir", str(archived[0]), "rev-parse", "main").stdout.strip() == sha
    git.fsck(archived[0])
    # nothing left: 204 all the same, as upstream (acs-git lib/git-server.js storage_delete)
    assert root_git.delete(f"/v1/storage/{repo.uuid}").status_code == 204
    assert len(sorted(git_server.archive.glob(f"{repo.uuid}*"))) == 1  # nothing archived

    configure(admin, repo.uuid, repo.path)
    code = wait_for(lambda: refs_status(root_git, f"/uuid/{repo.uuid}"), lambda c: c == 200, 3)
    assert code == 200
    git.clone(git_server.uuid_url(repo.uuid), work / "empty")
    assert git.run("rev-list", "--all", cwd=work / "empty").stdout == ""
    assert root_git.get(f"/v1/status/{repo.uuid}").json() == {}


def test_storage_can_be_deleted_again_right_after_it_was_recreated(
        git: Git, git_server: GitServer, repo: Repo, root_git: Api, work: Path) -> None:
    """Delete, recreate (any access), delete again at once: every archive is kept.

    Three deletes within well under a second: at least two fall in the same wall-clock
    second, so archive names must not collide at one-second resolution.
    """
    sha = push_one(git, git_server, repo, work)
    codes = []
    for _ in range(3):
        assert refs_status(root_git, f"/uuid/{repo.uuid}") == 200  # (re)creates storage
        codes.append(root_git.delete(f"/v1/storage/{repo.uuid}").status_code)
    assert codes == [204, 204, 204]
    archived = sorted(git_server.archive.glob(f"{repo.uuid}*"))
    assert len(archived) == 3
    heads = [git.run("--git-dir", str(a), "for-each-ref", "--format=%(objectname)",
                     "refs/heads/").stdout.split() for a in archived]
    assert sorted(heads) == [[], [], [sha]]


def test_storage_routes_validate_the_uuid(root_git: Api) -> None:
    assert root_git.delete(f"/v1/storage/{UNKNOWN}").status_code == 204  # none: as upstream
    assert root_git.delete("/v1/storage/not-a-uuid").status_code == 410
    assert root_git.delete(f"/v1/storage/{UNKNOWN.upper()}").status_code == 410


StorageSetup = Callable[[Api, str, Repo], None]


def storage_grant(permission: str, target: str | None = None, plural: bool = False,
                  on_class: bool = False) -> StorageSetup:
    def setup(admin: Api, principal: str, repo: Repo) -> None:
        where = target or (repo.klass if on_class else repo.uuid)
        grant(admin, principal, permission, where, plural=plural)
    return setup


REFUSED = {
    "no grant": lambda *_: None,
    "manage storage on another repo": lambda admin, p, r: grant(
        admin, p, uuids.GitPerm.ManageStorage, make_repo(admin).uuid),
    "manage storage on the repo's class, not plural":
        storage_grant(uuids.GitPerm.ManageStorage, on_class=True),
    "pull+push on the wildcard": lambda admin, p, r: [
        grant(admin, p, perm, uuids.NULL) for perm in (uuids.GitPerm.Pull, uuids.GitPerm.Push)],
}


@pytest.mark.parametrize("setup", REFUSED.values(), ids=REFUSED.keys())
def test_storage_routes_need_manage_storage_on_the_wildcard_or_the_repo(
        setup: StorageSetup, git: Git, git_server: GitServer, repo: Repo, admin: Api,
        root_git: Api, new_user: Callable[[], User], work: Path) -> None:
    push_one(git, git_server, repo, work)
    user = new_user()
    setup(admin, user.uuid, repo)
    api = git_server.api(user.auth)
    assert api.get("/v1/storage").status_code == 403
    assert api.delete(f"/v1/storage/{repo.uuid}").status_code == 403
    assert api.delete(f"/v1/storage/{UNKNOWN}").status_code == 403  # no existence probe
    assert git_server.bare(repo.uuid).exists()
    assert repo.uuid in stored(root_git)


ONE_REPO = {
    "manage storage on the repo": storage_grant(uuids.GitPerm.ManageStorage),
    "manage storage, plural, on the repo's class":
        storage_grant(uuids.GitPerm.ManageStorage, plural=True, on_class=True),
}


@pytest.mark.parametrize("setup", ONE_REPO.values(), ids=ONE_REPO.keys())
def test_manage_storage_on_a_repo_archives_that_repo_only(
        setup: StorageSetup, git: Git, git_server: GitServer, repo: Repo, admin: Api,
        root_git: Api, new_user: Callable[[], User], work: Path) -> None:
    """As the Cluster Manager holds it (plural, on Edge clusters): it archives a torn-down
    cluster's repo, lists nothing and archives no other repo."""
    other = make_repo(admin)
    push_one(git, git_server, repo, work / "a")
    push_one(git, git_server, other, work / "b")
    user = new_user()
    setup(admin, user.uuid, repo)
    api = git_server.api(user.auth)
    assert api.get("/v1/storage").status_code == 403
    assert api.delete(f"/v1/storage/{other.uuid}").status_code == 403
    assert api.delete(f"/v1/storage/{UNKNOWN}").status_code == 403  # no existence probe
    assert api.delete("/v1/storage/not-a-uuid").status_code == 403
    assert git_server.bare(other.uuid).exists() and other.uuid in stored(root_git)
    assert api.delete(f"/v1/storage/{repo.uuid}").status_code == 204
    assert not git_server.bare(repo.uuid).exists() and repo.uuid not in stored(root_git)


def test_storage_routes_need_credentials(git_server: GitServer, repo: Repo) -> None:
    anon = git_server.api()
    for r in (anon.get("/v1/storage"), anon.delete(f"/v1/storage/{repo.uuid}")):
        assert r.status_code == 401
        assert r.headers["WWW-Authenticate"].startswith("Basic")


@pytest.mark.parametrize("permission", [uuids.GitPerm.ManageStorage, uuids.GitPerm.All],
                         ids=["manage storage", "Git permission group"])
def test_manage_storage_on_the_wildcard_is_enough(
        permission: str, git: Git, git_server: GitServer, admin: Api,
        new_user: Callable[[], User], work: Path) -> None:
    repo = make_repo(admin)
    push_one(git, git_server, repo, work)
    user = new_user()
    grant(admin, user.uuid, permission, uuids.NULL)
    api = git_server.api(user.auth)
    assert repo.uuid in stored(api)
    assert api.delete(f"/v1/storage/{repo.uuid}").status_code == 204
    assert repo.uuid not in stored(api)


def test_storage_admin_revocation(git_server: GitServer, admin: Api,
                                  new_user: Callable[[], User]) -> None:
    user = new_user()
    g = grant(admin, user.uuid, uuids.GitPerm.ManageStorage, uuids.NULL)
    api = git_server.api(user.auth)
    assert api.get("/v1/storage").status_code == 200
    assert admin.delete(f"/v2/grant/{g}").status_code == 204
    r = wait_for(lambda: api.get("/v1/storage"), lambda r: r.status_code == 403, 3)
    assert r.status_code == 403
