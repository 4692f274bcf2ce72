"""The cluster API: create, read, edit, delete and redeploy clusters in one call each
(extensions; the list is :mod:`..fleet.cluster_list`).

Creating claims the name first (:mod:`fplus.cluster_manager.model.name_claims`), so of any number of
concurrent creates of one name exactly one makes a cluster and the others create nothing.
The claim records the creating principal: each may hold at most ``quota`` clusters it
created (the root principal is exempt; a deleted cluster's name claim goes with it).
Deleting and redeploying are requests to the reconciler: delete removes the configuration
entry (the reconciler then tears the cluster down, skipping the wait for the edge when
``force``); redeploy asks for a new commit of the re-rendered repo even when nothing
changed. Editing merge-patches the configuration entry (only :data:`EDITABLE` fields) and
writes it with the Config Store's If-Match, so a concurrent edit is never lost; the
reconciler re-renders the repo when the entry changes. What a create or an edit takes
beyond the cluster permission (a Flux template's grant, the wildcard for a label change that
moves the cluster into or out of a fleet deployment or cluster rollout) is
:mod:`.grants`'. Writing entries directly keeps working; this is a convenience over
it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from fplus.config_store import uuids
from fplus.config_store.client import ConfigStoreClient
from fplus.config_store.client import PreconditionFailed as EntryChanged
from fplus.config_store.client import Unprocessable as EntryRefused
from fplus.jsontypes import as_object

from ...changes.preview import Assessed, Changes, Target, answer, refusals
from ...changes.refusals import refuse
from ...model.apps_and_roles import CONFIG_APP, REQUEST_APP, STATUS_APP
from ...model.cluster_config import (
    ClusterConfig,
    InvalidConfig,
    check_config,
    patched_config,
    with_v_field,
)
from ...model.name_claims import NameClaims
from ...model.setup_status import SetupStatus
from ..errors import Conflict, NotFound, PreconditionFailed, TooMany, Unprocessable
from .edge_status import EdgeStatusUnreadable, read_edge_status
from .grants import Acting, LabelMoves, check_create, check_edit
from .status_view import Liveness, derive_phase, edge_text, host_count

log = logging.getLogger(__name__)
QUOTA = 1000
"""Clusters one principal may have created and not deleted (the default setting)."""
EDIT_TRIES = 5
"""Times an edit without If-Match is applied again when another write came between its
read and its write."""


@dataclass(frozen=True)
class Configured:
    """A cluster's configuration entry and the ETag naming its version."""

    config: Mapping[str, object]
    etag: str


def request_redeploy(cs: ConfigStoreClient, cluster: str) -> str:
    """Ask the reconciler for a new commit of ``cluster``'s re-rendered repo (a Failed
    cluster is tried again); return the request time."""
    requested = datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")
    cs.patch_config(REQUEST_APP, cluster, {"redeploy": requested})
    log.info("cluster %s: redeploy requested", cluster)
    return requested


class ClusterService:
    """Create, read, edit, delete and redeploy clusters (the list: :mod:`..fleet.cluster_list`)."""

    def __init__(self, cs: ConfigStoreClient, claims: NameClaims,
                 liveness: Liveness | None = None, quota: int = QUOTA,
                 changed: Callable[[], None] | None = None, *,
                 label_moves: LabelMoves, changes: Changes) -> None:
        self.cs, self.claims, self.liveness = cs, claims, liveness or Liveness()
        self.changes = changes
        self.quota = quota
        self._changed = changed or (lambda: None)  # after a write: the list reads afresh
        self._label_moves = label_moves

    def _new_config(self, body: object, cluster: str, creator: Acting) -> ClusterConfig:
        """``body`` as a new cluster's entry, checked (422, 403) and rendered (422)."""
        try:
            config = check_config(with_v_field(body))
        except InvalidConfig as exc:
            raise Unprocessable(str(exc)) from exc
        check_create(self.cs, creator, config)
        return config

    def preview_create(self, body: object, cluster: str, creator: Acting) -> dict[str, object]:
        """What creating ``cluster`` from ``body`` would commit (``?dryRun``); writes
        nothing."""
        config = self._new_config(body, cluster, creator)
        return answer(self.changes.assess([Target(cluster, config["name"], None, config)],
                                          compare=True))

    def create(self, body: object, cluster: str, creator: Acting) -> dict[str, object]:
        """Create cluster ``cluster`` (a new uuid) from ``body``: its object and entry,
        for ``creator`` (429 when it has created its quota of clusters; 403 when it lacks
        a grant :func:`.grants.check_create` asks for; 422 naming the field and the fix when
        its repo would not render)."""
        config = self._new_config(body, cluster, creator)
        refuse(refusals(self.changes.assess([Target(cluster, config["name"], None, config)],
                                            compare=False)))
        self._check_quota(creator)
        holder = self.claims.claim(config["name"], cluster, creator=creator.caller.uuid)
        if holder is not None:
            raise Conflict(f"the name {config['name']!r} is used by cluster {holder}")
        created = False
        try:
            self.cs.create_object(uuids.Class.EdgeCluster, cluster)
            created = True
            self.cs.put_config(CONFIG_APP, cluster, config)
        except Exception as exc:
            self._undo_create(config["name"], cluster, created)
            if isinstance(exc, EntryRefused):  # the configuration app's schema refused it
                raise Unprocessable(f"the Config Store refused the entry: {exc}") from exc
            raise
        self._changed()
        log.info("cluster %s (%s): created through the API", cluster, config["name"])
        return {"uuid": cluster, **config, "phase": "Pending"}

    def _check_quota(self, creator: Acting) -> None:
        """429 if ``creator`` (not root) holds ``quota`` clusters it created (0: no quota)."""
        if creator.caller.root or not self.quota:
            return
        if self.claims.created_by(creator.caller.uuid) >= self.quota:
            raise TooMany(f"cluster quota reached: a principal may create at most "
                          f"{self.quota} clusters (delete one first)")

    def _undo_create(self, name: str, cluster: str, created: bool) -> None:
        """Leave nothing behind of a create that failed halfway."""
        try:
            if created:
                self.cs.delete_object(cluster)
        finally:
            self.claims.release(name, cluster)

    def delete(self, cluster: str, *, force: bool = False) -> None:
        """Ask for ``cluster`` to be torn down (``force``: without waiting for the edge)."""
        configured = self.cs.get_config(CONFIG_APP, cluster) is not None
        if not configured and not SetupStatus.parse(
                self.cs.get_config(STATUS_APP, cluster)).exists:
            raise NotFound(f"unknown cluster {cluster}")
        if force:
            self.cs.patch_config(REQUEST_APP, cluster, {"forceDelete": True})
        if configured:
            self.cs.delete_config(CONFIG_APP, cluster)
        self._changed()
        log.info("cluster %s: deletion requested%s", cluster, " (forced)" if force else "")

    def redeploy(self, cluster: str) -> str:
        """Ask for a new commit of ``cluster``'s re-rendered repo; return the request time."""
        if self.cs.get_config(CONFIG_APP, cluster) is None:
            raise NotFound(f"unknown cluster {cluster}")
        return request_redeploy(self.cs, cluster)

    def configured(self, cluster: str) -> Configured:
        """The cluster's configuration entry and its ETag (404 when it has none: unknown,
        or 409 when it is being deleted)."""
        config, etag = self.cs.get_config_with_etag(CONFIG_APP, cluster)
        if config is None or etag is None:
            if SetupStatus.parse(self.cs.get_config(STATUS_APP, cluster)).exists:
                raise Conflict(f"cluster {cluster} is being deleted")
            raise NotFound(f"unknown cluster {cluster}")
        if not isinstance(config, dict):
            raise Conflict(f"cluster {cluster}'s configuration entry is not a JSON object; "
                           "write a valid one to the Config Store")
        return Configured(config, etag)

    def edit(self, cluster: str, patch: object, editor: Acting,
             if_match: Callable[[str], bool] | None = None) -> Configured:
        """Apply ``editor``'s merge-patch ``patch`` to the cluster's configuration entry and
        return the new one. ``if_match(etag)`` says whether the caller's If-Match names the
        current version (412 if not; None: no If-Match, the patch applies to whatever is
        current). 422 naming the field for a fixed field or an entry that cannot be
        commissioned; 403 naming the grant for a change :func:`.grants.check_edit`
        refuses ``editor``. Nothing is written on a refusal."""
        for _ in range(EDIT_TRIES):
            current, config = self._proposed(cluster, patch, editor)
            refuse(refusals(self._assess(cluster, current, config, compare=False)))
            if if_match is not None and not if_match(current.etag):
                raise PreconditionFailed(
                    f"cluster {cluster}'s configuration changed since it was read (its ETag "
                    f"is now \"{current.etag}\"); nothing was written: read it again")
            if config == current.config:
                return current
            try:
                etag = self.cs.put_config(CONFIG_APP, cluster, config, if_match=current.etag)
            except EntryChanged:
                if if_match is not None:
                    raise PreconditionFailed(
                        f"cluster {cluster}'s configuration changed while it was edited; "
                        "nothing was written: read it again") from None
                continue
            except EntryRefused as exc:
                raise Unprocessable(f"the Config Store refused the entry: {exc}") from exc
            self._changed()
            log.info("cluster %s: configuration edited (%s)", cluster,
                     ", ".join(sorted(as_object(patch))))
            return Configured(config, etag or self.configured(cluster).etag)
        raise Conflict(f"cluster {cluster}'s configuration kept changing while it was "
                       "edited; nothing was written: try again")

    def _proposed(self, cluster: str, patch: object,
                  editor: Acting) -> tuple[Configured, ClusterConfig]:
        """The current entry and the one ``patch`` makes of it, checked (422, 403)."""
        current = self.configured(cluster)
        try:
            config = patched_config(current.config, with_v_field(patch))
        except InvalidConfig as exc:
            raise Unprocessable(str(exc)) from exc
        check_edit(self.cs, editor, cluster, current.config, config, self._label_moves)
        return current, config

    def _assess(self, cluster: str, current: Configured, config: ClusterConfig,
                compare: bool) -> list[Assessed]:
        return self.changes.assess([Target(cluster, config["name"], current.config, config)],
                                   compare=compare)

    def preview_edit(self, cluster: str, patch: object, editor: Acting) -> dict[str, object]:
        """What ``editor``'s merge-patch would change in ``cluster``'s repo (``?dryRun``);
        writes nothing."""
        current, config = self._proposed(cluster, patch, editor)
        return answer(self._assess(cluster, current, config, compare=True))

    def _edge(self, cluster: str) -> dict[str, object] | None:
        """The edge's status entry; an unreadable one counts as none here (its own status
        route says why), so one edge cannot break the list of every cluster."""
        try:
            return read_edge_status(self.cs, cluster)
        except EdgeStatusUnreadable as exc:
            log.warning("cluster %s: listed without its edge status: %s", cluster, exc.message)
            return None

    def summary(self, cluster: str, now: datetime) -> dict[str, object] | None:
        """``{uuid, name, phase, lastSeen, hosts, commit}`` of one cluster (None: gone
        meanwhile)."""
        setup = SetupStatus.parse(self.cs.get_config(STATUS_APP, cluster))
        name: object = setup.name or setup.refused_name
        if not setup.exists:
            config = self.cs.get_config(CONFIG_APP, cluster)
            if config is None:
                return None
            name = config.get("name") if isinstance(config, dict) else None
        edge = self._edge(cluster) if setup.exists else None  # a Failed one may have been seen
        return {"uuid": cluster, "name": name,
                "phase": derive_phase(setup, edge, now, self.liveness),
                "lastSeen": edge_text(edge, "lastSeen"), "hosts": host_count(edge),
                "commit": setup.commit}
