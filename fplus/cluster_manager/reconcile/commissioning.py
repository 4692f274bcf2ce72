"""What happens when a cluster's configuration entry appears, changes or goes.

:func:`reconcile` is the whole answer; read this module top to bottom (and
:mod:`.teardown` for an entry that went). The reconciler calls it for one cluster at a time
(never two workers on one cluster), whenever the cluster's entry, the Flux template or the
cluster API's request for it changes, and again with back-off when it raised.

**Commissioning** (the entry exists), reference §3.4, in order. :func:`look` reads the
setup status and who holds the configured name (one request); then:

1. :func:`validate` — keys and DNS-1123 names; the name is the one the cluster was
   commissioned under.
2. :func:`render` — the repo's files from the Flux template (and the chart, if named).
3. :func:`claim_repo` — the repo the name gives is free or already this cluster's (on a
   Gitea a repo of that name may exist already: held by another, it is refused, naming it).
4. :func:`claim_name` — the name is free or this cluster's; a free one is claimed
   atomically (:mod:`fplus.cluster_manager.model.name_claims`, ``If-None-Match: *``) in the
   batch below: one cluster per name however entries and API calls interleave.
   A refusal in 1 to 4 is recorded as phase ``Failed`` with the refused entry kept apart from
   the accepted ``spec``; nothing is created, and it is not retried until the entry changes.
5. :func:`sparkplug_address` — ``{group_id: <organisation>-<name>}``.
6. :func:`accounts` — one principal per edge role with its grants (found by name again
   after a crash, so never duplicated; an account recorded with an older grant set is
   granted again, also when the cluster is otherwise current: :func:`regrant`).
7. :func:`git_config` — the Git repository configuration entry (the repo then exists on
   the Git server) and the repo group membership.
8. :func:`write_config` — the name's claim, the ``Provisioning`` record and 5 to 7, queued in
   the job's batch, written in one request: all or nothing. A name another cluster claimed
   meanwhile refuses the whole batch, so it too ends ``Failed`` with nothing created.
9. :func:`create_repo` — the repo host's own part (on a Gitea: the repo, Flux's user and its
   read access; nothing on ours).
10. :func:`repository` — the rendered files committed (no commit when nothing changed,
    unless the cluster API asked for a redeploy: then a new revision regardless).
11. :func:`ready` — ``ready: true`` with the commit and the self-link.

Each step is idempotent and returns what it did as a setup status patch; the patches are
recorded together with readiness (or, when a step fails, as far as they got), so a restart
repeats at most the work since the last record. A new cluster costs three Config Store
requests: the look, the batch, the record. Unlike ACS, spec and template changes reach
clusters that are already ready.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable

from fplus.config_store import uuids
from fplus.config_store.client import PreconditionFailed, batch

from ..changes.central_files import check_central_repos
from ..changes.rendering import TemplateMissing, context, helm_release, repo_content
from ..model import name_claims
from ..model.apps_and_roles import FLUX, ROLES, STATUS_APP, Role
from ..model.cluster_config import InvalidConfig, check_config
from ..model.setup_status import FAILED, READY, Patch, SetupStatus
from . import accounts as principals
from .job import Env, Job, OnResult, Step, record, send, stage
from .teardown import decommission

log = logging.getLogger(__name__)


class NameTaken(InvalidConfig):
    """The configured name is held by another cluster."""


def reconcile(cluster: str, env: Env, *, force: bool = False) -> None:
    """Bring ``cluster`` to its configured state, or tear it down.

    ``force`` re-renders a cluster that is ready for its current entry (a template change).
    Anything unexpected raises, for the caller to retry.
    """
    found = env.desired.entry(cluster)
    if found is None:
        decommission(cluster, env)
        return
    config, etag = found
    if config is None:  # deleted since the notification; the next one says so
        return
    job = Job(cluster, config, etag, SetupStatus.parse(None), force,
              request=env.desired.request(cluster))
    look(job, env)
    if job.redeploy_requested:
        job.force = True
    commission(job, env)


def look(job: Job, env: Env) -> None:
    """The setup status, and the cluster holding the configured name: one request."""
    name = job.config.get("name") if isinstance(job.config, dict) else None
    ops = [batch.get_config(STATUS_APP, job.cluster)]
    if isinstance(name, str) and name:
        ops.append(name_claims.read_op(name))
    status, *claim = env.cs.batch(ops)
    job.status = SetupStatus.parse(status.body if status.status == 200 else None)
    job.holder = name_claims.holder_in(claim[0]) if claim else None


# -- commissioning ------------------------------------------------------------------------

def commission(job: Job, env: Env) -> str:
    """Run the commissioning steps for ``job``; return the phase reached."""
    if not job.force and job.status.is_current(job.etag):
        if not job.status.name_claimed:  # commissioned before names were claimed
            _claim_current_name(job, env)
        regrant(job, env)
        return READY
    try:
        for check in CHECKS:
            check(job, env)
    except ValueError as exc:  # InvalidConfig, or a template that does not render
        return _refuse(job, env, exc)
    started = time.monotonic()
    verb = ("redeployed" if job.redeploy_requested
            else "updated" if job.status.commit else "commissioned")
    stage(job, env, job.status.provisioning(job.spec))
    progress: Patch = {}
    try:
        for step in STEPS:
            progress.update(step(job, env) or {})
    except NameTaken as exc:  # refused with the whole batch: nothing was created
        return _refuse(job, env, exc)
    except Exception:
        if progress:  # as far as it got; the retry takes it from there
            with contextlib.suppress(Exception):
                record(job, env, progress)
        raise
    record(job, env, progress)
    log.info("cluster %s (%s): %s at %s in %.0f ms", job.cluster, job.spec["name"], verb,
             job.commit, (time.monotonic() - started) * 1000)
    return READY


def _refuse(job: Job, env: Env, exc: ValueError) -> str:
    """Record the refusal as ``Failed``."""
    record(job, env, job.status.failed(job.config, str(exc), job.etag))
    log.info("cluster %s: refused: %s", job.cluster, exc)
    return FAILED


def validate(job: Job, env: Env) -> None:
    """The entry can be commissioned under its name (:class:`InvalidConfig` if not)."""
    job.spec = check_config(job.config)
    name = job.spec["name"]
    recorded = job.status.name
    if recorded and recorded != name and job.status.account(FLUX).uuid:
        raise InvalidConfig(f"the name of a commissioned cluster cannot change (it is "
                            f"{recorded!r}); delete the entry and create a new one")


def render(job: Job, env: Env) -> None:
    """The repo's files for the validated spec (ValueError if a template is unusable)."""
    helm = None
    if "chart" in job.spec:
        helm = helm_release(
            job.cluster, job.spec,
            env.cs.get_config(uuids.App.HelmChartTemplate, job.spec["chart"]),
            env.cs.get_config(uuids.App.K8sResourceTemplate, uuids.K8sResource.HelmRelease))
    template = env.desired.flux_template(job.spec)
    if template is None and "fluxTemplate" in job.spec:
        raise TemplateMissing(f"fluxTemplate: no Flux template {job.spec['fluxTemplate']} "
                              "in the Flux template app", "fluxTemplate")
    flux = check_central_repos(env.central, env.repos, env.settings.air_gapped, template,
                               job.spec)
    job.content = repo_content(template, context(env.settings, job.cluster, job.spec, helm,
                                                 flux), job.spec, env.settings.air_gapped)


def claim_repo(job: Job, env: Env) -> None:
    """The cluster's repo is not held by anything else (a ``ValueError`` naming the holder)."""
    env.repos.claim(job.cluster, job.spec["name"])


def claim_name(job: Job, env: Env) -> None:
    """The name is this cluster's, or free and claimed in the batch (:class:`NameTaken` if
    another cluster holds it)."""
    if job.holder not in (None, job.cluster):
        raise _taken(job, job.holder)
    if job.holder is None:
        claim_object, claim = name_claims.claim_ops(job.spec["name"], job.cluster)
        job.batch.add(claim_object)
        job.claim_at = job.batch.add(claim)


def _taken(job: Job, holder: str) -> NameTaken:
    return NameTaken(f"the name {job.spec['name']!r} is used by cluster {holder}")


def _claim_current_name(job: Job, env: Env) -> None:
    """Claim the name of a cluster commissioned before claims existed (once)."""
    name = job.status.name
    holder = env.claims.claim(name, job.cluster) if name else None
    if holder is not None:
        log.warning("cluster %s: its name %r is claimed by cluster %s", job.cluster, name,
                    holder)
        return
    record(job, env, {"nameClaimed": True})


def sparkplug_address(job: Job, env: Env) -> None:
    """The cluster's Sparkplug group id, ``<organisation>-<name>`` (queued)."""
    job.batch.add(batch.put_config(uuids.App.SparkplugAddress, job.cluster,
                                   {"group_id": f"{env.settings.organisation}-"
                                                f"{job.spec['name']}"}))


def accounts(job: Job, env: Env) -> None:
    """One principal per edge role (queued; recorded as done once written); roles already
    recorded as done with the current grant set are skipped."""
    _queue_accounts(job, env, job.spec["name"])


def _queue_accounts(job: Job, env: Env, name: str) -> None:
    for role in ROLES:
        if not principals.current(job.status.account(role)):
            job.batch.add(principals.account_op(role, job.cluster, name,
                                                env.groups.for_role(role)), _created(role))


def _created(role: Role) -> OnResult:
    """The status patch recording the role's principal from its creation's result."""
    return lambda result: {role.key: {"uuid": result.created, "done": True,
                                      "grants": principals.GRANTS}}


def regrant(job: Job, env: Env) -> None:
    """The current grant set for the accounts of a cluster that is otherwise current but
    was commissioned (or restored) with an older one, then recorded (two requests, once)."""
    name = job.status.name
    if name is None or all(principals.current(job.status.account(role)) for role in ROLES):
        return
    _queue_accounts(job, env, name)
    record(job, env, send(job, env))
    log.info("cluster %s: edge accounts given grant set %d", job.cluster, principals.GRANTS)


def git_config(job: Job, env: Env) -> None:
    """The repo's configuration entry (``<group path>/<name>``) and group membership
    (queued)."""
    job.batch.add(batch.put_config(uuids.App.GitRepoConfig, job.cluster,
                                   {"path": f"{env.groups.repo_path}/{job.spec['name']}"}))
    job.batch.add(batch.add_member(env.groups.cluster, job.cluster))


def write_config(job: Job, env: Env) -> Patch:
    """Everything queued, in one request (all or nothing); the accounts it recorded. A name
    claimed by another cluster since :func:`look` is :class:`NameTaken`."""
    claim_at = job.claim_at
    try:
        return send(job, env)
    except PreconditionFailed as exc:
        if claim_at is None or exc.index != claim_at:
            raise
        holder = env.claims.holder(job.spec["name"])
        if holder in (None, job.cluster):  # released, or ours, meanwhile: the retry sees it
            raise
        raise _taken(job, holder) from exc


def create_repo(job: Job, env: Env) -> None:
    """The repo host's own part of the repo (nothing on our Git server)."""
    env.repos.create(job.cluster, job.spec["name"])


def repository(job: Job, env: Env) -> None:
    """The rendered files, committed to the repo's ``main`` branch."""
    assert job.content is not None
    changes = job.content.change_set(always_commit=job.redeploy_requested)
    message = ("Redeploy" if job.redeploy_requested else "Cluster flux update"
               if job.status.commit else f"Commission cluster {job.spec['name']}")
    job.commit = env.repos.write(job.cluster, changes, message).commit


def ready(job: Job, env: Env) -> Patch:
    """Readiness, with the commit and the self-link the bootstrap script applies."""
    assert job.content is not None
    patch = job.status.commissioned(job.commit, job.content.self_link, job.etag)
    if job.redeploy_requested:
        patch["redeployed"] = job.request["redeploy"]
    return patch


CHECKS: tuple[Callable[[Job, Env], None], ...] = (validate, render, claim_repo, claim_name)
"""Before anything is created: a refusal here is recorded as ``Failed``."""
STEPS: tuple[Step, ...] = (sparkplug_address, accounts, git_config, write_config, create_repo,
                           repository, ready)
"""The work, in order."""
