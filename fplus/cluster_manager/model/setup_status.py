"""The Edge cluster setup status entry (``f6c67e6f-…``), typed.

The reconcile wing is its only writer (merge patches built here); the API wing reads it
(bootstrap scripts, secrets, the status view). Field names in the entry follow ACS
(reference §3.4) plus ours: ``phase``, ``conditions``, ``error``, ``observedEtag``,
``commit``. Conditions are summarised here, in one place: a condition's
``lastTransitionTime`` changes only when its ``status`` does.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from fplus.jsontypes import Doc, as_list, as_object, is_object, text

from .apps_and_roles import FLUX_VERSION, Role

PENDING, PROVISIONING, READY, FAILED, DELETING = (
    "Pending", "Provisioning", "Ready", "Failed", "Deleting")
"""The phases the reconciler records (the status view derives more from the edge)."""

Patch = dict[str, object]
"""A JSON merge patch of the setup status entry (``None`` values delete keys)."""


def utc_now() -> str:
    """The current time as the entry stores it (RFC 3339, seconds, UTC)."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


@dataclass(frozen=True)
class Account:
    """A per-cluster principal: its uuid once created, ``done`` once fully set up, and the
    number of the grant set it was last given (0: one from before grant sets were numbered)."""

    uuid: str | None = None
    done: bool = False
    grants: int = 0


@dataclass(frozen=True)
class Condition:
    """A Kubernetes-style status condition."""

    type: str
    status: str
    reason: str = ""
    message: str = ""
    last_transition_time: str = ""

    def as_entry(self) -> dict[str, str]:
        """The condition as stored in the entry."""
        return {"type": self.type, "status": self.status, "reason": self.reason,
                "message": self.message, "lastTransitionTime": self.last_transition_time}


@dataclass(frozen=True)
class SetupStatus:
    """One cluster's setup status as read from the Config Store."""

    entry: dict[str, object]
    """The entry as stored (the status view shows it whole)."""

    @classmethod
    def parse(cls, entry: object) -> SetupStatus:
        """The status of an entry (anything but an object counts as empty)."""
        return cls(as_object(entry))

    @property
    def exists(self) -> bool:
        """True when the entry is there at all."""
        return bool(self.entry)

    @property
    def spec(self) -> dict[str, object]:
        """The configuration the status was last written for."""
        return as_object(self.entry.get("spec"))

    @property
    def name(self) -> str | None:
        """The cluster's name as recorded (fixed once its accounts exist)."""
        return text(self.spec, "name")

    @property
    def namespace(self) -> str | None:
        """The edge namespace as recorded."""
        return text(self.spec, "namespace")

    @property
    def phase(self) -> str:
        """The recorded phase (``Pending`` before the reconciler wrote one)."""
        return text(self.entry, "phase") or PENDING

    @property
    def ready(self) -> bool:
        """True once the repo is populated and the accounts exist."""
        return self.entry.get("ready") is True

    @property
    def error(self) -> str | None:
        """Why the last attempt failed, if it did."""
        return text(self.entry, "error")

    @property
    def observed_etag(self) -> str | None:
        """The etag of the configuration entry the status reflects."""
        return text(self.entry, "observedEtag")

    @property
    def commit(self) -> str | None:
        """The repo commit the last commissioning wrote (or found current)."""
        return text(self.entry, "commit")

    @property
    def self_link(self) -> str | None:
        """The rendered self-link manifests the bootstrap script applies."""
        return text(self.entry, "self_link")

    @property
    def conditions(self) -> tuple[Condition, ...]:
        """The recorded conditions."""
        return tuple(Condition(text(c, "type") or "", text(c, "status") or "Unknown",
                               text(c, "reason") or "", text(c, "message") or "",
                               text(c, "lastTransitionTime") or "")
                     for c in as_list(self.entry.get("conditions")) if is_object(c))

    def account(self, role: Role) -> Account:
        """The role's principal as recorded (empty when not created yet)."""
        found = self.entry.get(role.key)
        if not is_object(found):
            return Account()
        grants = found.get("grants")
        return Account(text(found, "uuid"), found.get("done") is True,
                       grants if isinstance(grants, int) and not isinstance(grants, bool) else 0)

    def is_current(self, etag: str | None) -> bool:
        """True when the cluster is ready for exactly this configuration and Flux version."""
        return (self.ready and self.observed_etag == etag
                and self.entry.get("fluxVersion") == FLUX_VERSION)

    @property
    def name_claimed(self) -> bool:
        """True once the name is known to be claimed (clusters commissioned before names were
        claimed lack it)."""
        return self.entry.get("nameClaimed") is True

    @property
    def bootstrappable(self) -> bool:
        """True when a bootstrap script can be built (ready, with a self-link)."""
        return self.ready and self.self_link is not None

    # -- merge patches (the reconcile wing writes these) ---------------------------------
    def with_condition(self, condition: Condition) -> list[dict[str, str]]:
        """The conditions with ``condition`` set; its transition time kept when the status
        did not change."""
        kept = [c for c in self.conditions if c.type != condition.type]
        before = next((c for c in self.conditions if c.type == condition.type), None)
        when = (before.last_transition_time if before is not None
                and before.status == condition.status and before.last_transition_time
                else utc_now())
        merged = Condition(condition.type, condition.status, condition.reason,
                           condition.message, when)
        return [c.as_entry() for c in (*kept, merged)]

    def failed(self, refused: object, error: str, etag: str | None) -> Patch:
        """The patch recording a configuration that cannot be commissioned: it is kept as
        ``refused``, apart from ``spec`` (the last one accepted, which stays)."""
        return {"refused": {"spec": refused, "observedEtag": etag}, "ready": False,
                "phase": FAILED, "error": error, "observedEtag": etag,
                "conditions": self.with_condition(
                    Condition("Ready", "False", "InvalidConfig", error))}

    def provisioning(self, spec: Doc) -> Patch:
        """The patch recording that work on ``spec`` has started (it is now accepted)."""
        return {"spec": spec, "refused": None, "phase": PROVISIONING, "error": None,
                "ready": self.ready}

    @property
    def refused(self) -> dict[str, object] | None:
        """The configuration last refused, while it is the current one."""
        refused = self.entry.get("refused")
        return refused if is_object(refused) else None

    @property
    def refused_name(self) -> str | None:
        """The name in the configuration last refused (a cluster never commissioned is
        known by it)."""
        return text(as_object((self.refused or {}).get("spec")), "name")

    def commissioned(self, commit: str | None, self_link: str, etag: str | None) -> Patch:
        """The patch recording a commissioned cluster at ``commit``."""
        return {"self_link": self_link, "ready": True, "fluxVersion": FLUX_VERSION,
                "phase": READY, "error": None, "observedEtag": etag, "commit": commit,
                "nameClaimed": True,
                "conditions": self.with_condition(
                    Condition("Ready", "True", "Commissioned", f"repository at {commit}"))}

    @staticmethod
    def account_patch(role: Role, account: Account | None) -> Patch:
        """The patch recording ``role``'s principal (None: removed)."""
        value = None if account is None else {"uuid": account.uuid, "done": account.done,
                                               "grants": account.grants}
        return {role.key: value}

    @property
    def teardown(self) -> dict[str, object]:
        """What decommissioning recorded so far: ``started``, ``commit``."""
        return as_object(self.entry.get("teardown"))

    def deleting(self) -> Patch:
        """The patch recording that decommissioning has started (kept when resumed)."""
        started = self.teardown.get("started") or utc_now()
        return {"phase": DELETING, "ready": False, "teardown": {"started": started},
                "conditions": self.with_condition(
                    Condition("Ready", "False", "Deleting", "the cluster is being torn down"))}
