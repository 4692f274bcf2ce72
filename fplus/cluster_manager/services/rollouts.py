"""The rollout API: a fleet deployment's paced rollout (:mod:`..model.rollout`) read, paused,
resumed and aborted. A rollout is named by its fleet deployment's uuid (one rollout at a
time per fleet deployment: the one carrying its current revision).

The leader alone writes the rollout status; a request is written into the fleet deployment
entry as ``rolloutRequest: {action, rolloutId, at}`` (If-Match, so no concurrent edit is
lost) and the leader takes it on its next pass. A request the rollout's state does not allow
is a 409 and writes nothing.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any

from fplus.config_store.client import ConfigStoreClient
from fplus.config_store.client import PreconditionFailed as StaleEntry

from ..model.fleet_deployments import FLEET_APP
from ..model.rollout import (
    ABORTED,
    COMPLETE,
    HALTED,
    PAUSED,
    PROGRESSING,
    ROLLOUT_APP,
    revision,
)
from .errors import Conflict, NotFound

log = logging.getLogger(__name__)
ALLOWED = {"pause": (PROGRESSING,), "resume": (PAUSED, HALTED),
           "abort": (PROGRESSING, PAUSED, HALTED)}
"""The rollout states each request may be made in."""
ABORT_NOTE = ("abort leaves every cluster as it is: the clusters listed in `updated` keep "
              "the new revision, the others keep what they had; a new change starts a new "
              "rollout")


class RolloutService:
    """Read a rollout; ask the leader to pause, resume or abort it."""

    def __init__(self, cs: ConfigStoreClient) -> None:
        self.cs = cs

    def _entry(self, fleet: str) -> tuple[dict[str, Any], str | None]:
        entry, etag = self.cs.get_config_with_etag(FLEET_APP, fleet)
        if not isinstance(entry, dict):
            raise NotFound(f"unknown fleet deployment {fleet}")
        if entry.get("rollout") is None:
            raise NotFound(f"fleet deployment {fleet} has no rollout (it changes every "
                           "cluster at once)")
        return entry, etag

    def get(self, fleet: str) -> dict[str, Any]:
        """``{uuid, name, rollout, revision, state, step, steps, failed, updated, ...}``;
        ``state`` ``Pending`` until the leader begins the rollout of the current revision."""
        entry, _ = self._entry(fleet)
        return self._view(fleet, entry)

    def _view(self, fleet: str, entry: dict[str, Any]) -> dict[str, Any]:
        head = {"uuid": fleet, "name": entry.get("name"), "rollout": entry.get("rollout"),
                "revision": revision(entry)}
        status = self.cs.get_config(ROLLOUT_APP, fleet)
        if not isinstance(status, dict) or status.get("revision") != head["revision"]:
            return head | {"state": "Pending", "step": 0, "steps": [], "failed": [],
                           "updated": [], "message": "the leader has not begun the rollout "
                                                     "of this revision yet"}
        steps = status.get("steps") or []
        index = status.get("step", 0)
        updated = sorted({c for s in steps[:index] for c in s.get("clusters", [])}
                         | set(steps[index].get("started") or []) if steps else set())
        if status.get("state") == COMPLETE:
            updated = sorted({c for s in steps for c in s.get("clusters", [])})
        view = head | {k: v for k, v in status.items() if k != "request"} | {"updated": updated}
        if status.get("state") == ABORTED:
            view["message"] = ABORT_NOTE
        request = entry.get("rolloutRequest")
        if isinstance(request, dict) and request.get("rolloutId") == status.get("rolloutId") \
                and request.get("at") != status.get("request"):
            view["pendingRequest"] = request.get("action")
        return view

    def request(self, fleet: str, action: str) -> dict[str, Any]:
        """Ask the leader to ``pause``, ``resume`` or ``abort`` the rollout (202's body)."""
        entry, etag = self._entry(fleet)
        view = self._view(fleet, entry)
        if view["state"] not in ALLOWED[action]:
            raise Conflict(f"the rollout is {view['state']}; {action} needs it "
                           f"{' or '.join(ALLOWED[action])}")
        at = datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")
        entry["rolloutRequest"] = {"action": action, "rolloutId": view["rolloutId"], "at": at}
        try:
            self.cs.put_config(FLEET_APP, fleet, entry, if_match=etag)
        except StaleEntry:
            raise Conflict("the fleet deployment changed meanwhile; ask again") from None
        log.info("fleet deployment %s: %s of rollout %s requested", fleet, action,
                 view["rolloutId"])
        answer = {"uuid": fleet, "rolloutId": view["rolloutId"], "action": action,
                  "requested": True, "state": view["state"], "updated": view["updated"]}
        if action == "abort":
            answer["message"] = ABORT_NOTE
        return answer
