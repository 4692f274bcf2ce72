"""What happens when a cluster's configuration entry appears, changes or goes.

:func:`reconcile` is the whole answer; read this module top to bottom. The reconciler calls
it for one cluster at a time (never two workers on one cluster), whenever the cluster's
entry or the Flux template changes, and again with back-off when it raised.

**Commissioning** (the entry exists), reference §3.4, in order:

1. :func:`validate` — keys and DNS-1123 names; the name is the one the cluster was
   commissioned under, and no other cluster holds it.
2. :func:`render` — the repo's files from the Flux template (and the chart, if named).
   A refusal in 1 or 2 is recorded as phase ``Failed`` and not retried until the entry
   changes; nothing is created.
3. :func:`sparkplug_address` — ``{group_id: <organisation>-<name>}``.
4. :func:`accounts` — one principal per edge role with its grants (found by name again
   after a crash, so never duplicated).
5. :func:`git_config` — the Git repository configuration entry (the repo then exists on
   the Git server) and the repo group membership.
6. :func:`repository` — the rendered files committed (no commit when nothing changed).
7. :func:`ready` — ``ready: true`` with the commit and the self-link.

Each step is idempotent and returns what it did as a setup status patch; the patches are
recorded together with readiness (or, when a step fails, as far as they got), so a restart
repeats at most the work since the last record. Unlike ACS, spec and template changes reach
clusters that are already ready.

**Decommissioning** (the entry is gone, the setup status remains), in order: mark
``Deleting``, revoke the accounts (recorded ones by uuid, then any a crash left by name),
remove the entries and memberships commissioning made, archive the repo, forget the
cluster's bootstrap tokens, and drop the setup status last. Every removal is recorded as it
happens, so a restart resumes where it stopped; nothing is left behind.
"""

from __future__ import annotations

import contextlib
import copy
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import json_merge_patch

from config_store import uuids
from config_store.client import Forbidden

from ..gitrepo import ChangeSet, WriteResult
from ..settings import Settings
from ..setup_status import FAILED, READY, Patch, SetupStatus
from ..vocabulary import EDGE_APP, FLUX, ROLES, STATUS_APP, Role
from . import accounts as principals
from .configdb import ConfigDB
from .desired import DesiredState
from .rendering import RepoContent, context, helm_release, repo_content
from .validation import InvalidConfig, check_config

log = logging.getLogger(__name__)


class RepoStore(Protocol):
    """Where cluster repos are written (:class:`~cluster_manager.cluster_repos.ClusterRepos`)."""

    def write(self, cluster: str, changes: ChangeSet, message: str) -> WriteResult:
        """Commit ``changes`` to the cluster's repo (no commit if nothing changed)."""

    def archive(self, cluster: str) -> None:
        """Move the cluster's repo aside (a missing repo is fine)."""


@dataclass(frozen=True)
class Groups:
    """The classes commissioning puts accounts and repos into (the ServiceConfig entry)."""

    flux: str
    sync: str
    cluster: str
    repo_path: str = "cluster"

    @classmethod
    def from_service_config(cls, service: dict[str, Any]) -> Groups:
        """The groups named by the Cluster Manager's ServiceConfig entry."""
        group = service["group"]
        return cls(group["flux"]["uuid"], group["sync"]["uuid"], group["cluster"]["uuid"],
                   group["cluster"].get("path", "cluster"))

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
    forget_tokens: Callable[[str], None] = lambda cluster: None
    """Called once a cluster is gone (its bootstrap URLs must stop working)."""


@dataclass
class Job:
    """One cluster being reconciled: what was delivered, and what the steps found out."""

    cluster: str
    config: Any
    etag: str | None
    status: SetupStatus
    force: bool = False
    spec: dict[str, Any] = field(default_factory=dict)
    content: RepoContent | None = None
    commit: str | None = None


Step = Callable[[Job, Env], Patch | None]


def reconcile(cluster: str, env: Env, *, force: bool = False) -> None:
    """Bring ``cluster`` to its configured state, or remove it.

    ``force`` re-renders a cluster that is ready for its current entry (a template change).
    Anything unexpected raises, for the caller to retry.
    """
    found = env.desired.entry(cluster)
    if found is None:
        decommission(cluster, env)
        return
    config, etag = found
    if config is not None:  # None: deleted since the notification; the next one says so
        status = SetupStatus.parse(env.cs.get_config(STATUS_APP, cluster))
        commission(Job(cluster, config, etag, status, force), env)


# -- commissioning ------------------------------------------------------------------------

def commission(job: Job, env: Env) -> str:
    """Run the commissioning steps for ``job``; return the phase reached."""
    if not job.force and job.status.is_current(job.etag):
        return READY
    try:
        for check in CHECKS:
            check(job, env)
    except ValueError as exc:  # InvalidConfig, or a template that does not render
        _record(job, env, job.status.failed(job.config, str(exc), job.etag))
        log.warning("cluster %s: %s", job.cluster, exc)
        return FAILED
    _record(job, env, job.status.provisioning(job.spec))
    progress: Patch = {}
    try:
        for step in STEPS:
            progress.update(step(job, env) or {})
    except Exception:
        if progress:  # as far as it got; the retry takes it from there
            with contextlib.suppress(Exception):
                _record(job, env, progress)
        raise
    _record(job, env, progress)
    return READY


def validate(job: Job, env: Env) -> None:
    """The entry can be commissioned under its name (:class:`InvalidConfig` if not)."""
    job.spec = check_config(job.config)
    name = job.spec["name"]
    recorded = job.status.name
    if recorded and recorded != name and job.status.account(FLUX).uuid:
        raise InvalidConfig(f"the name of a commissioned cluster cannot change (it is "
                            f"{recorded!r}); delete the entry and create a new one")
    holder = env.desired.name_holder(job.cluster, name)
    if holder is not None:
        raise InvalidConfig(f"the name {name!r} is used by cluster {holder}")


def render(job: Job, env: Env) -> None:
    """The repo's files for the validated spec (ValueError if a template is unusable)."""
    helm = None
    if "chart" in job.spec:
        helm = helm_release(
            job.cluster, job.spec,
            env.cs.get_config(uuids.App.HelmChartTemplate, job.spec["chart"]),
            env.cs.get_config(uuids.App.K8sResourceTemplate, uuids.K8sResource.HelmRelease))
    job.content = repo_content(env.desired.flux_template(),
                               context(env.settings, job.cluster, job.spec, helm))


def sparkplug_address(job: Job, env: Env) -> None:
    """The cluster's Sparkplug group id, ``<organisation>-<name>``."""
    env.cs.put_config(uuids.App.SparkplugAddress, job.cluster,
                      {"group_id": f"{env.settings.organisation}-{job.spec['name']}"})


def accounts(job: Job, env: Env) -> Patch:
    """One principal per edge role; roles already recorded as done are skipped."""
    done: Patch = {}
    for role in ROLES:
        if not job.status.account(role).done:
            principal = principals.ensure_account(env.cs, role, job.cluster, job.spec["name"],
                                                  env.groups.for_role(role))
            done[role.key] = {"uuid": principal, "done": True}
    return done


def git_config(job: Job, env: Env) -> None:
    """The repo's configuration entry (``<group path>/<name>``) and group membership."""
    env.cs.put_config(uuids.App.GitRepoConfig, job.cluster,
                      {"path": f"{env.groups.repo_path}/{job.spec['name']}"})
    env.cs.add_member(env.groups.cluster, job.cluster)


def repository(job: Job, env: Env) -> None:
    """The rendered files, committed to the repo's ``main`` branch."""
    assert job.content is not None
    job.commit = env.repos.write(job.cluster, job.content.change_set(),
                                 "Cluster flux update").commit


def ready(job: Job, env: Env) -> Patch:
    """Readiness, with the commit and the self-link the bootstrap script applies."""
    assert job.content is not None
    return job.status.commissioned(job.commit, job.content.self_link, job.etag)


CHECKS: tuple[Callable[[Job, Env], None], ...] = (validate, render)
"""Before anything is created: a refusal here is recorded as ``Failed``."""
STEPS: tuple[Step, ...] = (sparkplug_address, accounts, git_config, repository, ready)
"""The work, in order."""


# -- decommissioning ----------------------------------------------------------------------

def decommission(cluster: str, env: Env) -> None:
    """Remove everything commissioning created; the setup status entry goes last."""
    status = env.cs.get_config(STATUS_APP, cluster)
    if status is None:
        return
    job = Job(cluster, None, None, SetupStatus.parse(status))
    for step in TEARDOWN:
        step(job, env)


def mark_deleting(job: Job, env: Env) -> None:
    """Say so in the status first."""
    _record(job, env, SetupStatus.deleting())


def revoke_accounts(job: Job, env: Env) -> None:
    """Remove each recorded account, then any a crash left behind under the cluster's name
    (ours: it serves this cluster, or it was never granted anything)."""
    for role in ROLES:
        principal = job.status.account(role).uuid
        if principal:
            _remove_account(env, role, principal, job.status.name)
            _record(job, env, SetupStatus.account_patch(role, None))
    if job.status.name is None:
        return
    for role in ROLES:
        orphan = env.cs.find_principal(role.principal_name(job.status.name))
        if orphan and (principals.serves(env.cs, orphan, job.cluster)
                       or not env.cs.find_grants(principal=orphan)):
            # recorded first: a crash halfway through is resumed above, by uuid
            _record(job, env, {role.key: {"uuid": orphan, "done": False}})
            principals.remove_account(env.cs, orphan)
            _record(job, env, SetupStatus.account_patch(role, None))


def remove_entries(job: Job, env: Env) -> None:
    """The Git config, repo group membership, Sparkplug address and edge status."""
    env.cs.delete_config(uuids.App.GitRepoConfig, job.cluster)
    if job.cluster in env.cs.class_members(env.groups.cluster):
        env.cs.remove_member(env.groups.cluster, job.cluster)
    env.cs.delete_config(uuids.App.SparkplugAddress, job.cluster)
    env.cs.delete_config(EDGE_APP, job.cluster)


def archive_repo(job: Job, env: Env) -> None:
    """The repo moves aside on the Git server (never destroyed)."""
    env.repos.archive(job.cluster)


def forget_tokens(job: Job, env: Env) -> None:
    """Bootstrap URLs handed out for the cluster stop working."""
    env.forget_tokens(job.cluster)


def drop_status(job: Job, env: Env) -> None:
    """Last: without the status entry, nothing says the cluster ever existed."""
    env.cs.delete_config(STATUS_APP, job.cluster)


TEARDOWN: tuple[Callable[[Job, Env], None], ...] = (
    mark_deleting, revoke_accounts, remove_entries, archive_repo, forget_tokens, drop_status)
"""Decommissioning, in order."""


# -- helpers ------------------------------------------------------------------------------

def _record(job: Job, env: Env, patch: Patch) -> None:
    """Merge-patch the setup status entry, and the job's view of it."""
    env.cs.patch_config(STATUS_APP, job.cluster, patch)
    job.status = SetupStatus(json_merge_patch.merge(copy.deepcopy(job.status.entry), patch))


def _remove_account(env: Env, role: Role, principal: str, name: str | None) -> None:
    """Remove a recorded account; one an earlier, killed run already removed is done.

    Once its object is gone it is no Edge account any more, and the Config Store refuses
    (403, not 404) to delete it again.
    """
    try:
        principals.remove_account(env.cs, principal)
    except Forbidden:
        if name is None or env.cs.find_principal(role.principal_name(name)) == principal:
            raise  # still there under its name: a real permission problem
        log.info("account %s was already removed", principal)
