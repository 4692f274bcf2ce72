"""The rollout API: paced rollouts (:mod:`.rule`) read, listed, paused, resumed,
aborted, rolled back and told to start clusters now, of both kinds: a fleet deployment's
(named by the fleet deployment's uuid, one rollout at a time: the one carrying its current
revision) and a cluster rollout
(:mod:`.cluster_entry`, named by its own uuid). Both are shown in one shape,
with ``kind`` ``fleet-deployment`` or ``cluster``.

The leader alone writes the rollout status; a request is written into the rollout's entry
(the fleet deployment's, or the cluster rollout's) as ``rolloutRequest: {action,
rolloutId, at}`` (If-Match, so no concurrent edit is lost) and the leader takes it on its
next pass. A request the rollout's state does not allow is a 409 and writes nothing.

Promoting a complete template rollout's candidate to the default Flux template is written as
the caller (:meth:`RolloutService.promote`): the Cluster Manager may not write that app,
which every edge executes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from fplus.config_store import uuids
from fplus.config_store.client import ConfigStoreClient
from fplus.config_store.client import PreconditionFailed as StaleEntry
from fplus.jsontypes import as_object, is_object

from ..services.errors import Conflict, NotFound, Unprocessable
from . import cluster_entry
from .cluster_entry import CLUSTER_ROLLOUT_APP
from .fleet_entry import FLEET_APP, REVISION_KEYS, revision
from .state import (
    ABORTED,
    COMPLETE,
    HALTED,
    PAUSED,
    PROGRESSING,
    ROLLED_BACK,
    ROLLOUT_APP,
    RolloutState,
)

log = logging.getLogger(__name__)
ALLOWED = {"pause": (PROGRESSING,), "resume": (PAUSED, HALTED),
           "abort": (PROGRESSING, PAUSED, HALTED),
           "rollback": (PROGRESSING, PAUSED, HALTED, ABORTED),
           "start-now": (PROGRESSING, PAUSED, HALTED)}
"""The rollout states each request may be made in."""
ROLLBACK_NOTE = ("every cluster the rollout changed gets what it had before it (the previous "
                 "revision of the fleet deployment, or the previous fluxVersion or Flux "
                 "template); a new change starts a new rollout")
FLEET, CLUSTER = "fleet-deployment", "cluster"
STATUS_KEYS = ("rolloutId", "revision", "state", "step", "steps", "failed", "startedAt",
               "updatedAt", "request", "promoted", "reason", "skipped", "waiting", "startNow",
               "rolledBack")
ABORT_NOTE = ("abort leaves every cluster as it is: the clusters listed in `updated` keep "
              "the new revision, the others keep what they had; a new change starts a new "
              "rollout")
CLUSTER_ABORT_NOTE = ("abort leaves every cluster as it is: the clusters listed in `updated` "
                      "keep the change (a template rollout's pins stay: those clusters keep "
                      "the candidate template), the others keep what they had")

PROMOTED = ("its template is the default Flux template now; the Cluster Manager removes the "
            "rollout's pins")
TEMPLATE_APP = uuids.App.FluxTemplate
PROMOTE_NOTE = ("every targeted cluster is pinned to the candidate template; make it the "
                "default (`fplus rollout promote`, or write it as the Flux template app's "
                "default entry) and the Cluster Manager removes the pins")


@dataclass
class Source:
    """A rollout's entry: the fleet deployment's or the cluster rollout's."""

    uuid: str
    kind: str
    entry: dict[str, object]
    etag: str | None = None

    @property
    def app(self) -> str:
        return FLEET_APP if self.kind == FLEET else CLUSTER_ROLLOUT_APP

    def head(self) -> dict[str, object]:
        """What the view shows of the entry."""
        head: dict[str, object] = {"uuid": self.uuid, "kind": self.kind,
                                   "name": self.entry.get("name"),
                                   "rollout": self.entry.get("rollout")}
        if self.kind == FLEET:
            return head | {"revision": revision(self.entry)}
        change = as_object(self.entry.get("change"))
        shown = ({"fluxTemplate": self.uuid} if "fluxTemplate" in change
                 else {"fluxVersion": change.get("fluxVersion")})
        return head | {"rollout": self.entry.get("rollout") or {},
                       "revision": cluster_entry.revision(self.entry), "change": shown,
                       "selector": self.entry.get("selector"),
                       "clusters": self.entry.get("clusters") or []}


def view(source: Source, status: object) -> dict[str, object]:
    """``{uuid, kind, name, rollout, revision, state, step, steps, failed, updated, ...}``;
    ``state`` ``Pending`` until the leader begins the rollout of the current revision."""
    head = source.head()
    state = RolloutState.parse(status)
    if state is None or state.revision != head["revision"]:
        return head | {"state": "Pending", "step": 0, "steps": [], "failed": [],
                       "updated": [], "message": "the leader has not begun the rollout "
                                                 "of this revision yet"}
    updated = sorted(state.updated({c for s in state.steps for c in s.clusters}))
    hidden = ("request", "kind", "baseline", "before", "spec", "previous")
    shown = head | {k: v for k, v in state.dump().items()
                    if k not in hidden and v is not None} | {"updated": updated}
    if state.state == ABORTED:
        shown["message"] = ABORT_NOTE if source.kind == FLEET else CLUSTER_ABORT_NOTE
    elif state.state == ROLLED_BACK:
        shown["message"] = ROLLBACK_NOTE
    elif state.promoted is False:
        shown["message"] = PROMOTE_NOTE
    request = source.entry.get("rolloutRequest")
    if is_object(request) and request.get("rolloutId") == state.rollout_id \
            and request.get("at") != state.request:
        shown["pendingRequest"] = request.get("action")
    return shown


def _check_rollback(source: Source, status: object) -> None:
    """409 unless the leader knows what the clusters had before (a fleet deployment's
    rollout begun before that was recorded does not)."""
    state = RolloutState.parse(status)
    known = state is not None and (state.previous is not None if source.kind == FLEET
                                   else state.before is not None)
    if not known:
        raise Conflict("this rollout began before what the clusters had was recorded: it "
                       "cannot be rolled back; change the fleet deployment back instead")


def _targets_of(shown: dict[str, object], clusters: Sequence[str]) -> list[str]:
    """``clusters`` (uuids), each one the rollout targets; else 409 naming the others."""
    steps = shown.get("steps")
    targeted = {c for s in steps if isinstance(s, dict) for c in s.get("clusters") or []} \
        if isinstance(steps, list) else set()
    others = [c for c in clusters if c not in targeted]
    if others:
        raise Unprocessable(f"clusters: the rollout does not target {', '.join(others)}")
    return list(dict.fromkeys(clusters))


class RolloutService:
    """Read and list rollouts; ask the leader to pause, resume or abort one."""

    def __init__(self, cs: ConfigStoreClient) -> None:
        self.cs = cs

    def _source(self, uuid: str) -> Source:
        entry, etag = self.cs.get_config_with_etag(CLUSTER_ROLLOUT_APP, uuid)
        if is_object(entry):
            return Source(uuid, CLUSTER, entry, etag)
        entry, etag = self.cs.get_config_with_etag(FLEET_APP, uuid)
        if not is_object(entry):
            raise NotFound(f"no rollout {uuid}: neither a cluster rollout nor a fleet "
                           "deployment")
        if entry.get("rollout") is None:
            raise NotFound(f"fleet deployment {uuid} has no rollout (it changes every "
                           "cluster at once)")
        return Source(uuid, FLEET, entry, etag)

    def get(self, uuid: str) -> dict[str, object]:
        """The rollout's view (see :func:`view`)."""
        source = self._source(uuid)
        return view(source, self.cs.get_config(ROLLOUT_APP, uuid))

    def list(self) -> list[dict[str, object]]:
        """Every rollout of both kinds (fleet deployments with a ``rollout``, cluster
        rollouts), oldest first: three searches, whatever their number."""
        select = {k: k for k in (*REVISION_KEYS, "rollout", "rolloutRequest", "createdAt")}
        fleets = self.cs.search(FLEET_APP, {}, select) or {}
        clusters = self.cs.search(CLUSTER_ROLLOUT_APP, {}, {k: k for k in (
            *cluster_entry.FIELDS, *cluster_entry.INTERNAL)}) or {}
        statuses = self.cs.search(ROLLOUT_APP, {}, {k: k for k in STATUS_KEYS}) or {}
        sources = [Source(u, FLEET, e) for u, e in fleets.items()
                   if isinstance(e, dict) and e.get("rollout") is not None]
        sources += [Source(u, CLUSTER, e) for u, e in clusters.items() if isinstance(e, dict)]
        sources.sort(key=lambda s: (str(s.entry.get("createdAt") or ""), s.uuid))
        return [view(s, statuses.get(s.uuid)) for s in sources]

    def request(self, uuid: str, action: str,
                clusters: Sequence[str] | None = None) -> dict[str, object]:
        """Ask the leader to ``pause``, ``resume``, ``abort``, ``rollback`` the rollout, or to
        ``start-now`` ``clusters`` outside their maintenance windows (202's body)."""
        source = self._source(uuid)
        status = self.cs.get_config(ROLLOUT_APP, uuid)
        shown = view(source, status)
        if shown["state"] not in ALLOWED[action]:
            raise Conflict(f"the rollout is {shown['state']}; {action} needs it "
                           f"{' or '.join(ALLOWED[action])}")
        if action == "rollback":
            _check_rollback(source, status)
        asked: dict[str, object] = {"action": action, "rolloutId": shown["rolloutId"],
                                    "at": datetime.now(UTC).isoformat(
                                        timespec="microseconds").replace("+00:00", "Z")}
        if clusters is not None:
            asked["clusters"] = _targets_of(shown, clusters)
        entry = source.entry | {"rolloutRequest": asked}
        try:
            self.cs.put_config(source.app, uuid, entry, if_match=source.etag)
        except StaleEntry:
            raise Conflict(f"the {source.kind} rollout's entry changed meanwhile; ask "
                           "again") from None
        log.info("%s rollout %s: %s of rollout %s requested", source.kind, uuid, action,
                 shown["rolloutId"])
        answer: dict[str, object] = {
            "uuid": uuid, "kind": source.kind, "rolloutId": shown["rolloutId"],
            "action": action, "requested": True, "state": shown["state"],
            "updated": shown["updated"]}
        if action == "abort":
            answer["message"] = ABORT_NOTE if source.kind == FLEET else CLUSTER_ABORT_NOTE
        elif action == "rollback":
            answer["message"] = ROLLBACK_NOTE
        elif clusters is not None:
            answer["clusters"] = asked["clusters"]
        return answer


    def promote(self, uuid: str,
                write_as_caller: Callable[[str, str, object], None]) -> dict[str, object]:
        """Make a complete template rollout's candidate the default Flux template entry,
        written by ``write_as_caller(app, obj, value)`` (the caller's own credentials: the
        Cluster Manager holds no write on that app). 409 and nothing written unless the
        rollout is a cluster rollout of a template, ``Complete``, its candidate still
        stored."""
        source = self._source(uuid)
        if source.kind != CLUSTER or "fluxTemplate" not in as_object(source.entry.get("change")):
            raise Conflict(f"rollout {uuid} is not a Flux template rollout")
        shown = view(source, self.cs.get_config(ROLLOUT_APP, uuid))
        if shown["state"] != COMPLETE:
            raise Conflict(f"the rollout is {shown['state']}; promote needs it Complete "
                           "(before, the new default would reach every unpinned cluster at "
                           "once)")
        candidate = self.cs.get_config(TEMPLATE_APP, uuid)
        if not isinstance(candidate, dict):
            raise Conflict(f"rollout {uuid}'s candidate template is gone from the Flux "
                           "template app: nothing to promote")
        write_as_caller(TEMPLATE_APP, TEMPLATE_APP, candidate)
        log.info("cluster rollout %s: its candidate template promoted to the default", uuid)
        return {"uuid": uuid, "promoted": True, "template": uuid, "message": PROMOTED}
