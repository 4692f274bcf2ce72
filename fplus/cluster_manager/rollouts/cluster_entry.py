"""Cluster rollouts (pure): a ``fluxVersion`` or a Flux template given to many clusters step
by step, paced by :func:`.rule.advance` like a fleet deployment's rollout.

An entry of the Cluster rollout app is ``{name, change: {fluxVersion: "vX.Y.Z"} |
{fluxTemplate: <Flux template>}, selector?, clusters?, rollout?: {maxUnavailable?, steps?},
createdAt, rolloutRequest?}``. It targets the configured clusters ``selector`` matches and
those listed in ``clusters`` (neither given: every configured cluster).

A cluster *holds* the change when its configuration entry names the ``fluxVersion``, or is
pinned to the rollout's candidate template (``fluxTemplate: <the rollout's uuid>``; the
leader stores the candidate in the Flux template app under that uuid). Only the clusters of
the steps begun are given it (their entry written with If-Match); the others keep theirs.
When a cluster is started, the commit its setup status names is recorded (``baseline``).
It is then (:func:`cluster_state`):

- *ready* once its setup status is ready for the entry holding the change, and either the
  commissioning made no new commit (nothing changes on the edge) or Edge Sync reports
  ``Synced`` at the new commit (``appliedCommit`` equal to it);
- *failed* once its setup status for that entry is ``Failed``, or the edge reports
  ``Degraded`` at the new commit;
- *progressing* until then.

A template rollout that completes leaves every targeted cluster pinned to the candidate
(``promoted: false``): the Cluster Manager may not write the default template (it writes no
entry edges execute but under objects it made, see ``reconcile.manager_account``), so an
operator makes the candidate the default (``fplus rollout promote``); once the leader sees
the default equal to the candidate it removes the pins (the clusters' repos keep the same
content: no new commit) and records ``promoted: true``. One aborted leaves the pins (each
cluster keeps what it has). :func:`plan` is the whole rule for one leader pass.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from fplus.config_store import uuids
from fplus.config_store.uuids import is_uuid
from fplus.kubenames.labels import selector_errors

from ..model.cluster_config import FLUX_VERSION, targeted
from ..model.deployment_state import FAILED, PROGRESSING, READY
from ..model.setup_status import FAILED as SETUP_FAILED
from ..model.setup_status import SetupStatus
from ..model.sync_state import DEGRADED, SYNCED, derive_sync
from .rule import Look, advance
from .state import COMPLETE, FINISHED, RolloutState, TargetState, same_but_updated, stamp
from .steps import Spec, spec_errors

CLUSTER_ROLLOUT_APP = uuids.App.ClusterRollout
CLUSTER_ROLLOUT_CLASS = uuids.Class.ClusterRollout
TEMPLATE_APP = uuids.App.FluxTemplate
KIND = "cluster"
"""The ``kind`` of a cluster rollout's status (fleet deployments' statuses have none)."""
FIELDS = ("name", "change", "selector", "clusters", "rollout")
INTERNAL = ("createdAt", "rolloutRequest")
SELF_LINK = "self-link.yaml"


def _template_errors(template: Any, at: str) -> dict[str, str]:
    if not isinstance(template, dict) or SELF_LINK not in template:
        return {at: f"a Flux template is an object of file name -> manifests with a "
                    f"{SELF_LINK} key"}
    for name, docs in template.items():
        if name != "x-fplus" and not isinstance(docs, list | str):
            return {f"{at}.{name}": "a template file is a list of manifests"}
    return {}


def change_errors(change: Any) -> dict[str, str]:
    """Why ``change`` is refused (``{}``: well-formed)."""
    if not isinstance(change, dict) or len(change) != 1 or not set(change) <= {
            "fluxVersion", "fluxTemplate"}:
        return {"change": "change must be {fluxVersion: \"vX.Y.Z\"} or {fluxTemplate: <a "
                          "Flux template>}"}
    if "fluxVersion" in change:
        version = change["fluxVersion"]
        if not (isinstance(version, str) and FLUX_VERSION.match(version)):
            return {"change.fluxVersion": "fluxVersion must be a Flux version such as v2.7.5"}
        return {}
    return _template_errors(change["fluxTemplate"], "change.fluxTemplate")


def request_errors(body: Any) -> dict[str, str]:
    """Why a new cluster rollout ``body`` is refused, by field (``{}``: well-formed)."""
    if not isinstance(body, dict):
        return {"": "the body must be a JSON object {name, change, selector?, clusters?, "
                    "rollout?}"}
    errors: dict[str, str] = {}
    unknown = set(body) - set(FIELDS)
    if unknown:
        errors[""] = f"unknown keys: {', '.join(sorted(map(str, unknown)))}"
    name = body.get("name")
    if not (isinstance(name, str) and 0 < len(name) <= 253):
        errors["name"] = "name must be a non-empty string of at most 253 characters"
    errors |= change_errors(body.get("change"))
    if "selector" in body:
        errors |= selector_errors(body["selector"], "selector")
    clusters = body.get("clusters", [])
    if not (isinstance(clusters, list) and all(is_uuid(c) for c in clusters)
            and len(set(clusters)) == len(clusters)):
        errors["clusters"] = "clusters must be a list of distinct cluster uuids"
    if "rollout" in body:
        errors |= spec_errors(body["rollout"])
    return errors


def revision(entry: Mapping[str, Any]) -> str:
    """The digest of the change a cluster rollout carries."""
    body = json.dumps(entry.get("change"), sort_keys=True)
    return hashlib.sha256(body.encode()).hexdigest()[:16]


def targets(entry: Mapping[str, Any], configs: Mapping[str, Any]) -> list[str]:
    """The configured clusters the rollout targets, sorted (none named: every one)."""
    listed = set(entry.get("clusters") or [])
    selector = entry.get("selector")
    return targeted(configs, selector if isinstance(selector, dict) else None, listed,
                    every=selector is None and not listed)


def with_change(uuid: str, entry: Mapping[str, Any], config: dict[str, Any]) -> dict[str, Any]:
    """The configuration entry ``config`` holding the rollout's change."""
    change = entry["change"]
    if "fluxVersion" in change:
        return config | {"fluxVersion": change["fluxVersion"]}
    return config | {"fluxTemplate": uuid}


def unpinned(uuid: str, config: dict[str, Any]) -> dict[str, Any] | None:
    """``config`` without its pin to ``uuid``'s template (None: not pinned to it)."""
    if config.get("fluxTemplate") != uuid:
        return None
    return {k: v for k, v in config.items() if k != "fluxTemplate"}


def cluster_state(config: Any, etag: str | None, setup: Any, edge: Any,
                  baseline: str | None, now: datetime) -> TargetState:
    """A started cluster's ``(state, message, since)`` (see the module's rules); ``config``
    and ``etag`` its configuration entry already holding the change."""
    status = SetupStatus.parse(setup)
    if etag is None or status.observed_etag != etag:
        return TargetState(PROGRESSING, "the Cluster Manager has not rendered the change yet",
                           None)
    if status.phase == SETUP_FAILED:
        return TargetState(FAILED, status.error or "the cluster's commissioning failed", None)
    if not status.ready:
        return TargetState(PROGRESSING, "the cluster is being commissioned", None)
    if status.commit == baseline:
        return TargetState(READY, "no new commit: nothing changes on the edge", stamp(now))
    sync = derive_sync(status.commit, edge if isinstance(edge, dict) else None, None)
    if sync.state == DEGRADED and sync.applied == status.commit:
        names = ", ".join(f"{o.get('kind')}/{o.get('name')}" for o in sync.failing[:3])
        return TargetState(FAILED, f"{sync.reason}{': ' + names if names else ''}", None)
    if sync.state == SYNCED:
        return TargetState(READY, sync.reason, stamp(now))
    return TargetState(PROGRESSING, sync.reason, None)


@dataclass
class Plan:
    """One pass over the cluster rollouts: what to write, in order."""

    templates: dict[str, Any] = field(default_factory=dict)
    """Flux template app key -> the template to store (a candidate, or the new default)."""
    configs: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Cluster -> its new configuration entry (written If-Match its etag)."""
    statuses: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Rollout -> its new status (written after the rest succeeded)."""
    wake_in: float | None = None


@dataclass(frozen=True)
class World:
    """The inputs of a pass: entries by app, and the configuration entries' etags."""

    rollouts: Mapping[str, Any]
    configs: Mapping[str, Any]
    config_etags: Mapping[str, str]
    setups: Mapping[str, Any]
    edges: Mapping[str, Any]
    statuses: Mapping[str, Any]
    templates: Mapping[str, Any]


def plan(world: World, now: datetime) -> Plan:
    """What the leader writes for every cluster rollout (oldest first, so of two changing
    one cluster the newer one writes last)."""
    found = Plan()
    order = sorted((e.get("createdAt") or "", r) for r, e in world.rollouts.items()
                   if isinstance(e, dict) and not request_errors(
                       {k: e[k] for k in FIELDS if k in e}))
    for _, uuid in order:
        _one(found, world, uuid, world.rollouts[uuid], now)
    return found


def _configs(found: Plan, world: World) -> Mapping[str, Any]:
    return {c: found.configs.get(c, v) for c, v in world.configs.items()}


def _one(found: Plan, world: World, uuid: str, entry: dict[str, Any], now: datetime) -> None:
    rev = revision(entry)
    previous = world.statuses.get(uuid)
    template = entry["change"].get("fluxTemplate")
    if isinstance(previous, dict) and previous.get("revision") == rev \
            and previous.get("state") in FINISHED:
        if template is not None and previous["state"] == COMPLETE \
                and not previous.get("promoted"):
            _unpin_when_default(found, world, uuid, template, previous, now)
        return
    configs = _configs(found, world)
    aimed = targets(entry, configs)
    if template is not None and world.templates.get(uuid) != template:
        found.templates[uuid] = template
    held = frozenset(c for c in aimed if with_change(uuid, entry, configs[c]) == configs[c])
    baseline = dict(previous.get("baseline") or {}) if isinstance(previous, dict) \
        and previous.get("revision") == rev else {}
    states = {c: cluster_state(configs[c], world.config_etags.get(c), world.setups.get(c),
                               world.edges.get(c), baseline[c], now)
              if c in baseline and c in held and c not in found.configs
              else TargetState(PROGRESSING, "the change is not written yet", None)
              for c in aimed}
    labels = {c: (configs[c].get("labels") or {}) for c in aimed}
    request = entry.get("rolloutRequest")
    decision = advance(Look(uuid, Spec.parse(entry.get("rollout") or {}), rev, aimed, labels,
                            RolloutState.parse(previous), states, now,
                            request if isinstance(request, dict) else None, held))
    state = decision.state
    state.kind, state.baseline = KIND, baseline
    if template is not None and state.state == COMPLETE:
        state.promoted = False
    for cluster in sorted(decision.new):
        baseline.setdefault(cluster, SetupStatus.parse(world.setups.get(cluster)).commit
                            or "")
        wanted = with_change(uuid, entry, configs[cluster])
        if wanted != configs[cluster]:
            found.configs[cluster] = wanted
    status = state.dump()
    if status != previous:
        if isinstance(previous, dict) and not same_but_updated(status, previous):
            status["updatedAt"] = stamp(now)
        found.statuses[uuid] = copy.deepcopy(status)
    if decision.wake_in is not None:
        found.wake_in = min(found.wake_in or decision.wake_in, decision.wake_in)


def _unpin_when_default(found: Plan, world: World, uuid: str, template: Any,
                        previous: dict[str, Any], now: datetime) -> None:
    """A complete template rollout: once its candidate is the default, remove its pins."""
    if world.templates.get(TEMPLATE_APP) != template:
        return
    for cluster, config in _configs(found, world).items():
        free = unpinned(uuid, config) if isinstance(config, dict) else None
        if free is not None:
            found.configs[cluster] = free
    found.statuses[uuid] = dict(previous) | {"promoted": True,
                                             "updatedAt": stamp(now)}
