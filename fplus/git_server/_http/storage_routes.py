"""``/v1/storage``: the repos on disk, for holders of Manage storage on the wildcard; one
repo's storage is also archived for a holder of Manage storage on that repo (a plural grant
on its class included), as the Cluster Manager holds it on Edge clusters."""

from __future__ import annotations

from flask import Blueprint, Response, jsonify

from fplus.config_store import uuids
from fplus.config_store.uuids import is_uuid

from .auth import authenticated, caller, require
from .context import server
from .params import repo_uuid

bp = Blueprint("storage", __name__)


def _require_storage_admin() -> None:
    """403 unless the caller holds Manage storage on the wildcard itself (checked before
    the repo uuid, so nobody else can probe for storage)."""
    require(uuids.GitPerm.ManageStorage, uuids.NULL, wild=False,
            message="needs Manage storage on the wildcard")


@bp.get("/v1/storage")
@authenticated
def storage_list() -> Response:
    """Uuids of the repos with storage."""
    _require_storage_admin()
    return jsonify(server().storage.stored())


@bp.delete("/v1/storage/<repo>")
@authenticated
def storage_delete(repo: str) -> tuple[str, int]:
    """Archive a repo's storage (moved aside under the data dir, never destroyed); 204 also
    when there is none, as upstream (acs-git lib/git-server.js ``storage_delete``)."""
    git = server()
    if not (is_uuid(repo) and git.access.allowed(caller(), uuids.GitPerm.ManageStorage, repo,
                                                 wild=False)):
        _require_storage_admin()
    git.storage.delete(repo_uuid(repo))
    return "", 204
