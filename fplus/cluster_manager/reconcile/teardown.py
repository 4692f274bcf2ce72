"""What happens when a cluster's configuration entry goes: an ordered teardown.

:func:`decommission` runs these steps in order; read top to bottom. Every removal is recorded
as it happens, so a restart resumes where it stopped; nothing is left behind.

1. :func:`mark_deleting` — phase ``Deleting`` (kept, with its start time, when resumed).
2. :func:`remove_deployments` — the cluster's Edge deployments (a person's and the fleet
   deployments' members), so Edge Sync uninstalls their HelmReleases while it still runs.
3. :func:`teardown_commit` — the repo keeps only its README, the Flux self-link and Edge Sync,
   so Flux on the edge prunes everything else the repo deployed (Sealed Secrets, the
   cluster's charts, sealed secrets, ``by-hand/``) while Edge Sync stays to report it.
4. :func:`await_edge` — wait until the edge reports it applied that commit (``appliedCommit``
   in its Edge cluster status), or ``--teardown-timeout`` passes, or the cluster API asked for
   a forced delete, or the edge never reported at all. The wait is a requeue, not a held
   worker.
5. :func:`revoke_accounts` — the edge principals (recorded ones by uuid, then any a crash left
   behind under the cluster's name), and Flux's account on the repo host where it has its
   own (Gitea), so Flux and Edge Sync lose their access only now.
6. :func:`remove_entries` — Git config, repo group membership, Sparkplug address, the edge's
   status and the cluster API's request entry.
7. :func:`release_name` — the name claim, so the name can be used again.
8. :func:`archive_repo` — the repo moves aside on the Git server (never destroyed; on a
   Gitea archived under another name, or deleted if so configured).
9. :func:`forget_tokens` — bootstrap URLs handed out for the cluster stop working (and its
   pinned sealing key is forgotten).
10. :func:`remove_cluster` — last: the Edge cluster object, and the setup status with it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import UTC, datetime

from fplus.config_store import uuids
from fplus.config_store.client import ConfigStoreError, Conflict, Forbidden

from ..gitrepo import ChangeSet
from ..model import edge_deployments
from ..model.apps_and_roles import EDGE_APP, REQUEST_APP, ROLES, STATUS_APP, Role
from ..model.setup_status import SetupStatus
from . import accounts as principals
from .job import Env, Job, record
from .rendering import CLUSTER_DIR
from .workqueue import RequeueAfter

log = logging.getLogger(__name__)
KEPT_FILES = ("self-link.yaml", "edge-sync.yaml")
"""What the teardown commit keeps of ``edo/cluster/``: Flux's link to the repo, and Edge Sync
to report that Flux applied the teardown (the default Flux template's file names)."""
SECRETS_DIR = "edo/secrets"
POLL_SECONDS = 10.0
"""How often a teardown waiting for the edge looks again."""


def decommission(cluster: str, env: Env) -> None:
    """Tear ``cluster`` down (see the module docstring); nothing to do without a status."""
    status = env.cs.get_config(STATUS_APP, cluster)
    if status is None:
        return
    job = Job(cluster, None, None, SetupStatus.parse(status),
              request=env.desired.request(cluster))
    if not job.status.teardown:
        log.info("cluster %s (%s): teardown started", cluster, job.status.name)
    for step in TEARDOWN:
        step(job, env)
    log.info("cluster %s (%s): teardown finished", cluster, job.status.name)


def mark_deleting(job: Job, env: Env) -> None:
    """Say so in the status first."""
    record(job, env, job.status.deleting())


def remove_deployments(job: Job, env: Env) -> None:
    """The cluster's Edge deployments: Edge Sync on the edge uninstalls them."""
    removed = edge_deployments.remove_all_of_cluster(env.cs, job.cluster)
    if removed:
        log.info("cluster %s: removed its %d Edge deployment(s)", job.cluster, len(removed))


def teardown_commit(job: Job, env: Env) -> None:
    """Commit the repo's teardown state once (a repo never written needs none)."""
    if job.status.teardown.get("commit") or job.status.commit is None:
        return
    generated = env.repos.read_dir(job.cluster, CLUSTER_DIR)
    kept = {f"{CLUSTER_DIR}/{name}" for name in KEPT_FILES}
    changes = ChangeSet(deletes=frozenset(generated) - kept,
                        replace_dirs=frozenset({SECRETS_DIR, "by-hand"}))
    commit = env.repos.write(job.cluster, changes, "Tear down the edge cluster").commit
    record(job, env, {"teardown": {"commit": commit}})


def await_edge(job: Job, env: Env) -> None:
    """Wait for the edge to apply the teardown commit (see the module docstring)."""
    commit = job.status.teardown.get("commit")
    if not commit or job.request.get("forceDelete") is True:
        return
    try:
        edge = env.cs.get_config(EDGE_APP, job.cluster)
    except ConfigStoreError as exc:
        if exc.status < 500:
            raise
        edge = {}  # the Config Store cannot serve it now: not applied yet, the timeout holds
    if not isinstance(edge, dict):
        return
    if edge.get("appliedCommit") == commit:
        record(job, env, {"teardown": {"applied": True}})
        return
    waited = _seconds_since(job.status.teardown.get("started"))
    remaining = env.settings.teardown_timeout - waited
    if remaining <= 0:
        log.warning("cluster %s: the edge did not report the teardown commit %s within "
                    "%.0f s; revoking its access anyway", job.cluster, commit,
                    env.settings.teardown_timeout)
        return
    raise RequeueAfter(min(POLL_SECONDS, remaining), f"waiting for the edge to apply {commit}")


def revoke_accounts(job: Job, env: Env) -> None:
    """Remove each recorded account, then any a crash left behind under the cluster's name
    (ours: it serves this cluster, or it was never granted anything)."""
    for role in ROLES:
        principal = job.status.account(role).uuid
        if principal:
            _remove_account(env, role, principal, job.status.name)
            record(job, env, SetupStatus.account_patch(role, None))
    env.repos.revoke_reader(job.cluster)
    if job.status.name is None:
        return
    for role in ROLES:
        orphan = env.cs.find_principal(role.principal_name(job.status.name))
        if orphan and (principals.serves(env.cs, orphan, job.cluster)
                       or not env.cs.find_grants(principal=orphan)):
            # recorded first: a crash halfway through is resumed above, by uuid
            record(job, env, {role.key: {"uuid": orphan, "done": False}})
            principals.remove_account(env.cs, orphan)
            record(job, env, SetupStatus.account_patch(role, None))


def remove_entries(job: Job, env: Env) -> None:
    """The Git config, repo group membership, Sparkplug address, edge status and request."""
    env.cs.delete_config(uuids.App.GitRepoConfig, job.cluster)
    if job.cluster in env.cs.class_members(env.groups.cluster):
        env.cs.remove_member(env.groups.cluster, job.cluster)
    env.cs.delete_config(uuids.App.SparkplugAddress, job.cluster)
    env.cs.delete_config(EDGE_APP, job.cluster)
    env.cs.delete_config(REQUEST_APP, job.cluster)


def release_name(job: Job, env: Env) -> None:
    """The cluster's name claim (only if this cluster holds it)."""
    if job.status.name is not None:
        env.claims.release(job.status.name, job.cluster)


def archive_repo(job: Job, env: Env) -> None:
    """The repo moves aside on the Git server (never destroyed)."""
    env.repos.archive(job.cluster)


def forget_tokens(job: Job, env: Env) -> None:
    """Bootstrap URLs handed out for the cluster stop working."""
    env.forget_tokens(job.cluster)


def remove_cluster(job: Job, env: Env) -> None:
    """Last: the Edge cluster object with its remaining entries (the setup status among
    them); if the object cannot go (someone else uses it), just the setup status."""
    try:
        env.cs.delete_object(job.cluster)
    except (Conflict, Forbidden) as exc:
        log.warning("cluster %s: keeping its object (%s); removing its setup status",
                    job.cluster, exc)
    env.cs.delete_config(STATUS_APP, job.cluster)


TEARDOWN: tuple[Callable[[Job, Env], None], ...] = (
    mark_deleting, remove_deployments, teardown_commit, await_edge, revoke_accounts,
    remove_entries, release_name, archive_repo, forget_tokens, remove_cluster)
"""Decommissioning, in order."""


def _seconds_since(moment: object) -> float:
    if not isinstance(moment, str):
        return 0.0
    try:
        then = datetime.strptime(moment, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except ValueError:
        return 0.0
    return time.time() - then.timestamp()


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
