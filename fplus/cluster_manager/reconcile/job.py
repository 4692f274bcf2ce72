"""What every reconcile step works with: the surroundings (:class:`Env`), the cluster being
reconciled (:class:`Job`), how a step records its progress (:func:`record`), and the batch a
job carries (:class:`Batch`): steps queue their Config Store writes in it and :func:`send`
writes them in one request, all or nothing."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field

import json_merge_patch

from fplus.config_store.client import BatchOp, BatchResult, batch
from fplus.git.store import RepoStore
from fplus.jsontypes import Doc, as_object

from ..changes.central_files import CentralFiles
from ..changes.rendering import RepoContent
from ..model.apps_and_roles import STATUS_APP, Role
from ..model.cluster_config import ClusterConfig
from ..model.name_claims import NameClaims
from ..model.settings import Settings
from ..model.setup_status import Patch, SetupStatus
from .configdb import ConfigDB
from .desired_state import DesiredState


@dataclass(frozen=True)
class Groups:
    """The classes commissioning puts accounts and repos into (the ServiceConfig entry)."""

    flux: str
    sync: str
    cluster: str
    repo_path: str = "cluster"

    @classmethod
    def from_service_config(cls, service: Doc) -> Groups:
        """The groups named by the Cluster Manager's ServiceConfig entry."""
        group = as_object(service["group"])
        flux, sync, repos = (as_object(group[key]) for key in ("flux", "sync", "cluster"))
        return cls(str(flux["uuid"]), str(sync["uuid"]), str(repos["uuid"]),
                   str(repos.get("path", "cluster")))

    def for_role(self, role: Role) -> str:
        """The group of ``role``'s accounts."""
        return {"flux": self.flux, "sync": self.sync}[role.key]


@dataclass(frozen=True)
class Env:
    """What the steps work with."""

    cs: ConfigDB
    settings: Settings
    groups: Groups
    repos: RepoStore
    desired: DesiredState
    claims: NameClaims
    forget_tokens: Callable[[str], None] = lambda cluster: None
    """Called once a cluster is gone (its bootstrap URLs must stop working, its pinned
    sealing key is forgotten)."""
    central: CentralFiles = field(default_factory=CentralFiles)
    """What the central repos hold, as renders need to know."""
    phase_changed: Callable[[str, str, str | None], None] = lambda cluster, phase, name: None
    """Called with the cluster, its new phase and its name whenever :func:`record` writes a
    phase other than the one recorded (the audit log's ``phase.changed``)."""


OnResult = Callable[[BatchResult], Patch | None]
"""What a queued operation's result means for the setup status (a patch to record, or None)."""


@dataclass
class Batch:
    """Config Store operations queued by a job's steps, each with what to make of its result."""

    ops: list[BatchOp] = field(default_factory=list)
    then: list[OnResult | None] = field(default_factory=list)

    def add(self, op: BatchOp, then: OnResult | None = None) -> int:
        """Queue ``op``; its index in the batch."""
        self.ops.append(op)
        self.then.append(then)
        return len(self.ops) - 1


@dataclass
class Job:
    """One cluster being reconciled: what was delivered, and what the steps found out."""

    cluster: str
    config: object
    etag: str | None
    status: SetupStatus
    force: bool = False
    spec: ClusterConfig = field(default_factory=ClusterConfig)
    content: RepoContent | None = None
    commit: str | None = None
    request: dict[str, object] = field(default_factory=dict)
    """What the cluster API asked for this cluster (``redeploy``, ``forceDelete``)."""
    holder: str | None = None
    """The cluster holding the configured name, as read with the setup status (None: free)."""
    batch: Batch = field(default_factory=Batch)
    """The Config Store writes queued for the next :func:`send`."""
    claim_at: int | None = None
    """The index in :attr:`batch` of the name's claim, when it is queued there."""
    claim_etag: str | None = None
    """The etag of the name's claim as read with :attr:`holder` (teardown)."""
    named: dict[str, str | None] = field(default_factory=dict)
    """The principal holding each role's name for the cluster, by role key, as read
    (teardown)."""

    @property
    def redeploy_requested(self) -> bool:
        """True when the cluster API asked for a redeploy not yet carried out."""
        asked = self.request.get("redeploy")
        return isinstance(asked, str) and asked != self.status.entry.get("redeployed")


Step = Callable[[Job, Env], Patch | None]


def _name(job: Job, patch: Patch) -> str | None:
    """The cluster's name from the patch's spec or the configuration delivered."""
    for source in (patch.get("spec"), job.spec, job.config):
        name = source.get("name") if isinstance(source, dict) else None
        if isinstance(name, str):
            return name
    return None


def record(job: Job, env: Env, patch: Patch) -> None:
    """Merge-patch the setup status entry, and the job's view of it (a new phase is told
    to :attr:`Env.phase_changed`)."""
    env.cs.patch_config(STATUS_APP, job.cluster, patch)
    _recorded(job, env, patch)


def stage(job: Job, env: Env, patch: Patch) -> None:
    """Queue a merge patch of the setup status in the job's batch; the job's view of it (and
    a new phase) follow once :func:`send` wrote it."""
    job.batch.add(batch.patch_config(STATUS_APP, job.cluster, patch),
                  lambda _: _recorded(job, env, patch))


def send(job: Job, env: Env) -> Patch:
    """Write the job's queued operations in one request (all or nothing; a refusal raises
    the failing operation's error, its ``index`` naming it) and empty the batch; return the
    status patch their results make."""
    queued, job.batch, job.claim_at = job.batch, Batch(), None
    if not queued.ops:
        return {}
    patch: Patch = {}
    for then, result in zip(queued.then, env.cs.batch(queued.ops), strict=True):
        patch.update((then and then(result)) or {})
    return patch


def _recorded(job: Job, env: Env, patch: Patch) -> None:
    """The job's view of the status after ``patch`` was written."""
    phase = patch.get("phase")
    if isinstance(phase, str) and phase != job.status.entry.get("phase"):
        env.phase_changed(job.cluster, phase, job.status.name or _name(job, patch))
    job.status = SetupStatus(json_merge_patch.merge(copy.deepcopy(job.status.entry), patch))

