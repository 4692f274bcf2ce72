"""What happens when a cluster's configuration entry goes: an ordered teardown.

:func:`decommission` runs these steps in order; read top to bottom. Steps queue their Config
Store writes in the job's batch and :func:`write` sends them, all or nothing, at the points
the order needs; every removal is recorded in the same batch as it happens, so a restart
resumes where it stopped; nothing is left behind.

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
5. :func:`look_up` — who holds the cluster's principal names and its name's claim (one
   request), for 6 and 8.
6. :func:`revoke_accounts` — the edge principals (recorded ones by uuid, then any a crash left
   behind under the cluster's name), so Flux and Edge Sync lose their access only now.
7. :func:`remove_entries` — Git config, repo group membership, Sparkplug address, the edge's
   status and the cluster API's request entry.
8. :func:`release_name` — the name claim, so the name can be used again; 6 to 8 are written
   together.
9. :func:`revoke_reader` — Flux's account on the repo host where it has its own (Gitea).
10. :func:`archive_repo` — the repo moves aside on the Git server (never destroyed; on a
    Gitea archived under another name, or deleted if so configured).
11. :func:`forget_tokens` — bootstrap URLs handed out for the cluster stop working (and its
    pinned sealing key is forgotten).
12. :func:`remove_cluster` — last: the Edge cluster object, and the setup status with it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime

from fplus.config_store import uuids
from fplus.config_store.client import ConfigStoreError, batch
from fplus.git.repo import ChangeSet

from ..changes.rendering import CLUSTER_DIR
from ..model import edge_deployments, name_claims
from ..model.apps_and_roles import EDGE_APP, REQUEST_APP, ROLES, STATUS_APP
from ..model.setup_status import SetupStatus
from . import accounts as principals
from .job import Env, Job, record, send, stage
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


def write(job: Job, env: Env) -> None:
    """What the steps before queued, in one request (all or nothing)."""
    send(job, env)


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
        stage(job, env, {"teardown": {"applied": True}})
        return
    waited = _seconds_since(job.status.teardown.get("started"))
    remaining = env.settings.teardown_timeout - waited
    if remaining <= 0:
        log.warning("cluster %s: the edge did not report the teardown commit %s within "
                    "%.0f s; revoking its access anyway", job.cluster, commit,
                    env.settings.teardown_timeout)
        return
    raise RequeueAfter(min(POLL_SECONDS, remaining), f"waiting for the edge to apply {commit}")


def look_up(job: Job, env: Env) -> None:
    """The principals holding the cluster's role names (:attr:`Job.named`) and its name's
    claim (:attr:`Job.holder`, :attr:`Job.claim_etag`): one request."""
    name = job.status.name
    if name is None:
        return
    ops = [principals.named_op(role, name) for role in ROLES]
    *named, claim = env.cs.batch([*ops, name_claims.read_op(name)])
    job.named = {role.key: found.body if found.status == 200 and isinstance(found.body, str)
                 else None
                 for role, found in zip(ROLES, named, strict=True)}
    job.holder, job.claim_etag = name_claims.holder_in(claim), claim.etag


def revoke_accounts(job: Job, env: Env) -> None:
    """Remove each recorded account, then any a crash left behind under the cluster's name
    (ours: it serves this cluster, or it was never granted anything); queued."""
    for role in ROLES:
        principal = job.status.account(role).uuid
        if principal:
            # not under its name any more: an earlier, killed run removed it (its object may
            # be gone too: then it is no Edge account, and its deletion is refused with 403)
            gone = job.status.name is not None and job.named.get(role.key) != principal
            _remove(job, env, principal, gone)
            stage(job, env, SetupStatus.account_patch(role, None))
    for role in ROLES:
        orphan = job.named.get(role.key)
        if orphan and orphan != job.status.account(role).uuid and (
                principals.serves(env.cs, orphan, job.cluster)
                or not env.cs.find_grants(principal=orphan)):
            _remove(job, env, orphan, False)


def _remove(job: Job, env: Env, principal: str, gone_ok: bool) -> None:
    for op in principals.removal_ops(principal, gone_ok=gone_ok):
        job.batch.add(op)


def remove_entries(job: Job, env: Env) -> None:
    """The Git config, repo group membership, Sparkplug address, edge status and request
    (queued)."""
    for app in (uuids.App.GitRepoConfig, uuids.App.SparkplugAddress, EDGE_APP, REQUEST_APP):
        job.batch.add(batch.delete_config(app, job.cluster))
    job.batch.add(batch.remove_member(env.groups.cluster, job.cluster))


def release_name(job: Job, env: Env) -> None:
    """The cluster's name claim, only if this cluster holds it (queued; changed or gone
    meanwhile, it is no longer ours to release)."""
    if job.status.name is not None and job.holder == job.cluster and job.claim_etag:
        job.batch.add(name_claims.release_op(job.status.name, job.claim_etag))


def revoke_reader(job: Job, env: Env) -> None:
    """Flux's access to the repo, where the repo host keeps it apart (Gitea)."""
    env.repos.revoke_reader(job.cluster)


def archive_repo(job: Job, env: Env) -> None:
    """The repo moves aside on the Git server (never destroyed)."""
    env.repos.archive(job.cluster)


def forget_tokens(job: Job, env: Env) -> None:
    """Bootstrap URLs handed out for the cluster stop working."""
    env.forget_tokens(job.cluster)


def remove_cluster(job: Job, env: Env) -> None:
    """Last: the Edge cluster object with its remaining entries (the setup status among
    them); if the object cannot go (someone else uses it), just the setup status. One
    request."""
    drop = replace(batch.delete_object(job.cluster), accept=(404, *KEPT_OBJECT))
    dropped, _ = env.cs.batch([drop, batch.delete_config(STATUS_APP, job.cluster)])
    if dropped.status in KEPT_OBJECT:
        log.warning("cluster %s: keeping its object (refused with %d: %s); removed its setup "
                    "status", job.cluster, dropped.status, dropped.body)


KEPT_OBJECT = (403, 409)
"""The answers to the cluster object's deletion that keep it (in use, or not ours to
delete): its setup status goes regardless."""
TEARDOWN: tuple[Callable[[Job, Env], None], ...] = (
    mark_deleting, remove_deployments, teardown_commit, await_edge, look_up,
    revoke_accounts, remove_entries, release_name, write, revoke_reader, archive_repo,
    forget_tokens, remove_cluster)
"""Decommissioning, in order."""


def _seconds_since(moment: object) -> float:
    if not isinstance(moment, str):
        return 0.0
    try:
        then = datetime.strptime(moment, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except ValueError:
        return 0.0
    return time.time() - then.timestamp()
