"""What happens when a cluster's configuration entry appears, changes or goes.

:func:`reconcile` is the whole answer; read this module top to bottom (and
:mod:`.teardown` for an entry that went). The reconciler calls it for one cluster at a time
(never two workers on one cluster), whenever the cluster's entry, the Flux template or the
cluster API's request for it changes, and again with back-off when it raised.

**Commissioning** (the entry exists), reference §3.4, in order:

1. :func:`validate` — keys and DNS-1123 names; the name is the one the cluster was
   commissioned under.
2. :func:`render` — the repo's files from the Flux template (and the chart, if named).
3. :func:`claim_repo` — the repo the name gives is free or already this cluster's (on a
   Gitea a repo of that name may exist already: held by another, it is refused, naming it).
4. :func:`claim_name` — the name, claimed atomically
   (:mod:`fplus.cluster_manager.model.name_claims`): one cluster per name however entries and
   API calls interleave.
   A refusal in 1 to 4 is recorded as phase ``Failed`` with the refused entry kept apart from
   the accepted ``spec``; nothing is created, and it is not retried until the entry changes.
5. :func:`sparkplug_address` — ``{group_id: <organisation>-<name>}``.
6. :func:`accounts` — one principal per edge role with its grants (found by name again
   after a crash, so never duplicated).
7. :func:`git_config` — the Git repository configuration entry (the repo then exists on
   the Git server) and the repo group membership; the repo host's own part (on a Gitea:
   the repo, Flux's user and its read access).
8. :func:`repository` — the rendered files committed (no commit when nothing changed,
   unless the cluster API asked for a redeploy: then a new revision regardless).
9. :func:`ready` — ``ready: true`` with the commit and the self-link.

Each step is idempotent and returns what it did as a setup status patch; the patches are
recorded together with readiness (or, when a step fails, as far as they got), so a restart
repeats at most the work since the last record. Unlike ACS, spec and template changes reach
clusters that are already ready.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable

from fplus.config_store import uuids

from ..model.apps_and_roles import FLUX, ROLES, STATUS_APP
from ..model.cluster_config import InvalidConfig, check_config
from ..model.setup_status import FAILED, READY, Patch, SetupStatus
from . import accounts as principals
from .central_repo_check import CHARTS, FLUX_FILE
from .central_repo_check import FLUX as FLUX_REPO
from .job import Env, Job, Step, record
from .rendering import (
    SEALED_SECRETS_FILE,
    TemplateMissing,
    bundle_files,
    context,
    flux_files,
    flux_version,
    helm_release,
    repo_content,
)
from .teardown import decommission

log = logging.getLogger(__name__)


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
    status = SetupStatus.parse(env.cs.get_config(STATUS_APP, cluster))
    job = Job(cluster, config, etag, status, force, request=env.desired.request(cluster))
    if job.redeploy_requested:
        job.force = True
    commission(job, env)


# -- commissioning ------------------------------------------------------------------------

def commission(job: Job, env: Env) -> str:
    """Run the commissioning steps for ``job``; return the phase reached."""
    if not job.force and job.status.is_current(job.etag):
        if not job.status.name_claimed:  # commissioned before names were claimed
            _claim_current_name(job, env)
        return READY
    try:
        for check in CHECKS:
            check(job, env)
    except ValueError as exc:  # InvalidConfig, or a template that does not render
        record(job, env, job.status.failed(job.config, str(exc), job.etag))
        log.info("cluster %s: refused: %s", job.cluster, exc)
        return FAILED
    started = time.monotonic()
    verb = ("redeployed" if job.redeploy_requested
            else "updated" if job.status.commit else "commissioned")
    record(job, env, job.status.provisioning(job.spec))
    progress: Patch = {}
    try:
        for step in STEPS:
            progress.update(step(job, env) or {})
    except Exception:
        if progress:  # as far as it got; the retry takes it from there
            with contextlib.suppress(Exception):
                record(job, env, progress)
        raise
    record(job, env, progress)
    log.info("cluster %s (%s): %s at %s in %.0f ms", job.cluster, job.spec["name"], verb,
             job.commit, (time.monotonic() - started) * 1000)
    return READY


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
                              "in the Flux template app")
    flux = _check_central_repos(job, env, template)
    job.content = repo_content(template, context(env.settings, job.cluster, job.spec, helm,
                                                 flux), job.spec, env.settings.air_gapped)


def _check_central_repos(job: Job, env: Env, template: object) -> str | None:
    """The Flux version the cluster's edge applies from the centre (None: none named);
    :class:`TemplateMissing` if a central repo lacks what the cluster's repo would name."""
    if not isinstance(template, dict):
        return None  # repo_content says why
    air_gapped = env.settings.air_gapped
    selected = set(bundle_files(template, job.spec, air_gapped))
    if air_gapped and SEALED_SECRETS_FILE in selected:
        env.central.require(env.repos, CHARTS, "sealed-secrets", "Chart.yaml",
                            "air-gapped edges install the sealed-secrets chart from the "
                            "shared charts repo, which does not hold it: import it with "
                            "`cluster-manager import-chart sealed-secrets-<version>.tgz`")
    flux = flux_version(template, job.spec)
    if flux is not None and selected & flux_files(template):
        env.central.require(env.repos, FLUX_REPO, flux, FLUX_FILE,
                            f"Flux {flux} is not in the central Flux repo: import it with "
                            "`cluster-manager import-flux` (a `flux install --export` of it)")
    return flux


def claim_repo(job: Job, env: Env) -> None:
    """The cluster's repo is not held by anything else (a ``ValueError`` naming the holder)."""
    env.repos.claim(job.cluster, job.spec["name"])


def claim_name(job: Job, env: Env) -> None:
    """The name, claimed for this cluster (:class:`InvalidConfig` if another holds it)."""
    holder = env.claims.claim(job.spec["name"], job.cluster, fresh=job.status.name is None)
    if holder is not None:
        raise InvalidConfig(f"the name {job.spec['name']!r} is used by cluster {holder}")


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
    env.repos.create(job.cluster, job.spec["name"])


def repository(job: Job, env: Env) -> None:
    """The rendered files, committed to the repo's ``main`` branch."""
    assert job.content is not None
    changes = job.content.change_set(always_commit=job.redeploy_requested)
    message = "Redeploy" if job.redeploy_requested else "Cluster flux update"
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
STEPS: tuple[Step, ...] = (sparkplug_address, accounts, git_config, repository, ready)
"""The work, in order."""
