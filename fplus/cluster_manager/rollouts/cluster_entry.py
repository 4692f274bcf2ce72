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
cluster keeps what it has). When a cluster is started, what it had (its ``fluxVersion``, or
its pin; null: none) is recorded (``before``); a rollout rolled back gives each cluster it
changed that again, where its entry still holds the change. :func:`plan` is the whole rule
for one leader pass.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Required, TypedDict, cast

from fplus.config_store import uuids
from fplus.config_store.uuids import is_uuid
from fplus.jsontypes import Doc, JsonObject, JsonValue, as_object, is_object, string_map
from fplus.kubenames.labels import selector_errors

from ..model.cluster_config import FLUX_VERSION, targeted
from ..model.deployment_state import FAILED, PROGRESSING, READY
from ..model.setup_status import FAILED as SETUP_FAILED
from ..model.setup_status import SetupStatus
from ..model.sync_state import DEGRADED, SYNCED, derive_sync
from .gates_input import GateInputs
from .rule import Look, advance
from .state import (
    COMPLETE,
    FINISHED,
    ROLLED_BACK,
    RolloutState,
    TargetState,
    is_rolling,
    same_but_updated,
    stamp,
)
from .steps import Spec, spec_errors

CLUSTER_ROLLOUT_APP = uuids.App.ClusterRollout
CLUSTER_ROLLOUT_CLASS = uuids.Class.ClusterRollout
TEMPLATE_APP = uuids.App.FluxTemplate
KIND = "cluster"
"""The ``kind`` of a cluster rollout's status (fleet deployments' statuses have none)."""
FIELDS = ("name", "change", "selector", "clusters", "rollout")
INTERNAL = ("createdAt", "rolloutRequest")
SELF_LINK = "self-link.yaml"


class ClusterChange(TypedDict, total=False):
    """What a cluster rollout gives its clusters: exactly one of the two."""

    fluxVersion: str
    fluxTemplate: JsonObject
    """A Flux template (file name -> manifests, ``self-link.yaml`` among them)."""


class ClusterRolloutEntry(TypedDict, total=False):
    """An entry of the Cluster rollout app that :func:`request_errors` accepts."""

    name: Required[str]
    change: Required[ClusterChange]
    selector: JsonObject
    clusters: list[str]
    rollout: JsonObject
    createdAt: JsonValue
    rolloutRequest: JsonValue
    """The last pause, resume or abort asked for (read by :func:`.rule.advance`)."""


def parse_entry(entry: object) -> ClusterRolloutEntry | None:
    """The cluster rollout an entry holds (None: none the leader acts on, its :data:`FIELDS`
    refused by :func:`request_errors`)."""
    if not is_object(entry) or request_errors({k: entry[k] for k in FIELDS if k in entry}):
        return None
    return cast(ClusterRolloutEntry, entry)  # every field it names was checked


def _template_errors(template: object, at: str) -> dict[str, str]:
    if not is_object(template) or SELF_LINK not in template:
        return {at: f"a Flux template is an object of file name -> manifests with a "
                    f"{SELF_LINK} key"}
    for name, docs in template.items():
        if name != "x-fplus" and not isinstance(docs, list | str):
            return {f"{at}.{name}": "a template file is a list of manifests"}
    return {}


def change_errors(change: object) -> dict[str, str]:
    """Why ``change`` is refused (``{}``: well-formed)."""
    if not is_object(change) or len(change) != 1 or not set(change) <= {
            "fluxVersion", "fluxTemplate"}:
        return {"change": "change must be {fluxVersion: \"vX.Y.Z\"} or {fluxTemplate: <a "
                          "Flux template>}"}
    if "fluxVersion" in change:
        version = change["fluxVersion"]
        if not (isinstance(version, str) and FLUX_VERSION.match(version)):
            return {"change.fluxVersion": "fluxVersion must be a Flux version such as v2.7.5"}
        return {}
    return _template_errors(change["fluxTemplate"], "change.fluxTemplate")


def request_errors(body: object) -> dict[str, str]:
    """Why a new cluster rollout ``body`` is refused, by field (``{}``: well-formed)."""
    if not is_object(body):
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


def revision(entry: Doc) -> str:
    """The digest of the change a cluster rollout carries."""
    body = json.dumps(entry.get("change"), sort_keys=True)
    return hashlib.sha256(body.encode()).hexdigest()[:16]


def targets(entry: ClusterRolloutEntry, configs: Doc) -> list[str]:
    """The configured clusters the rollout targets, sorted (none named: every one)."""
    listed = set(entry.get("clusters") or [])
    selector = entry.get("selector")
    return targeted(configs, selector, listed, every=selector is None and not listed)


def with_change(uuid: str, entry: ClusterRolloutEntry, config: Doc) -> dict[str, object]:
    """The configuration entry ``config`` holding the rollout's change."""
    change = entry["change"]
    if "fluxVersion" in change:
        return dict(config) | {"fluxVersion": change["fluxVersion"]}
    return dict(config) | {"fluxTemplate": uuid}


def changed_key(entry: ClusterRolloutEntry) -> str:
    """The configuration key the rollout changes: ``fluxVersion`` or ``fluxTemplate``."""
    return "fluxVersion" if "fluxVersion" in entry["change"] else "fluxTemplate"


def restored(uuid: str, entry: ClusterRolloutEntry, config: Doc,
             before: Mapping[str, str | None], cluster: str) -> dict[str, object] | None:
    """``config`` given back what it had before the rollout changed it (None: it does not
    hold the change any more, or what it had is not recorded)."""
    if cluster not in before or with_change(uuid, entry, config) != config:
        return None
    key, had = changed_key(entry), before[cluster]
    found = {k: v for k, v in config.items() if k != key}
    return found if had is None else found | {key: had}


def unpinned(uuid: str, config: Doc) -> dict[str, object] | None:
    """``config`` without its pin to ``uuid``'s template (None: not pinned to it)."""
    if config.get("fluxTemplate") != uuid:
        return None
    return {k: v for k, v in config.items() if k != "fluxTemplate"}


def cluster_state(config: object, etag: str | None, setup: object, edge: object,
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
    sync = derive_sync(status.commit, edge if is_object(edge) else None, None)
    if sync.state == DEGRADED and sync.applied == status.commit:
        names = ", ".join(f"{o.get('kind')}/{o.get('name')}" for o in sync.failing[:3])
        return TargetState(FAILED, f"{sync.reason}{': ' + names if names else ''}", None)
    if sync.state == SYNCED:
        return TargetState(READY, sync.reason, stamp(now))
    return TargetState(PROGRESSING, sync.reason, None)


@dataclass
class Plan:
    """One pass over the cluster rollouts: what to write, in order."""

    templates: dict[str, JsonObject] = field(default_factory=dict)
    """Flux template app key -> the template to store (a candidate, or the new default)."""
    configs: dict[str, dict[str, object]] = field(default_factory=dict)
    """Cluster -> its new configuration entry (written If-Match its etag)."""
    statuses: dict[str, Mapping[str, object]] = field(default_factory=dict)
    """Rollout -> its new status (written after the rest succeeded)."""
    wake_in: float | None = None


@dataclass(frozen=True)
class World:
    """The inputs of a pass: entries by app, as read, and the configuration entries'
    etags."""

    rollouts: Doc
    configs: Doc
    config_etags: Mapping[str, str]
    setups: Doc
    edges: Doc
    statuses: Doc
    templates: Doc
    gate_inputs: GateInputs | None = None
    """Staleness and maintenance windows (None: none apply)."""


def plan(world: World, now: datetime) -> Plan:
    """What the leader writes for every cluster rollout (oldest first, so of two changing
    one cluster the newer one writes last)."""
    found = Plan()
    entries = {r: e for r, e in ((r, parse_entry(e)) for r, e in world.rollouts.items())
               if e is not None}
    order = sorted((str(e.get("createdAt") or ""), r) for r, e in entries.items())
    for _, uuid in order:
        _one(found, world, uuid, entries[uuid], now)
    return found


def _restore(found: Plan, world: World, uuid: str, entry: ClusterRolloutEntry,
             clusters: frozenset[str] | list[str], before: Mapping[str, str | None]) -> None:
    """Give each of ``clusters`` what it had before the rollout (where it still holds the
    change)."""
    every = _configs(found, world)
    for cluster in sorted(clusters):
        config = every.get(cluster)
        back = restored(uuid, entry, config, before, cluster) if is_object(config) else None
        if back is not None:
            found.configs[cluster] = back


def _configs(found: Plan, world: World) -> dict[str, object]:
    return {c: found.configs.get(c, v) for c, v in world.configs.items()}


def _one(found: Plan, world: World, uuid: str, entry: ClusterRolloutEntry,
         now: datetime) -> None:
    rev = revision(entry)
    previous = world.statuses.get(uuid)
    template = entry["change"].get("fluxTemplate")
    if isinstance(previous, dict) and previous.get("revision") == rev \
            and previous.get("state") in FINISHED and not is_rolling(previous):
        if template is not None and previous["state"] == COMPLETE \
                and not previous.get("promoted"):
            _unpin_when_default(found, world, uuid, template, previous, now)
        state = RolloutState.parse(previous)
        if state is not None and state.state == ROLLED_BACK:
            _restore(found, world, uuid, entry, state.rolled_back or [], state.before or {})
        return
    every = _configs(found, world)
    aimed = targets(entry, every)
    configs = {c: as_object(every[c]) for c in aimed}  # targets are objects
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
    labels = {c: string_map(configs[c].get("labels")) for c in aimed}
    request = entry.get("rolloutRequest")
    last = RolloutState.parse(previous)
    same = last is not None and last.revision == rev
    before: dict[str, str | None] = dict(last.before or {}) if same and last else {}
    gate = world.gate_inputs or GateInputs(now)
    decision = advance(Look(uuid, Spec.parse(entry.get("rollout") or {}), rev, aimed, labels,
                            last, states, now, request if is_object(request) else None,
                            held, gate.offline(aimed, world.edges), gate.closed(labels),
                            not same or (last is not None and last.before is not None)))
    state = decision.state
    state.kind, state.baseline, state.before = KIND, baseline, before
    if template is not None and state.state == COMPLETE:
        state.promoted = False
    key = changed_key(entry)
    for cluster in sorted(decision.new):
        baseline.setdefault(cluster, SetupStatus.parse(world.setups.get(cluster)).commit
                            or "")
        had = configs[cluster].get(key)
        before.setdefault(cluster, had if isinstance(had, str) else None)
        wanted = with_change(uuid, entry, configs[cluster])
        if wanted != configs[cluster]:
            found.configs[cluster] = wanted
    _restore(found, world, uuid, entry, decision.restore, before)
    status = state.dump()
    if status != previous:
        if isinstance(previous, dict) and not same_but_updated(status, previous):
            status["updatedAt"] = stamp(now)
        found.statuses[uuid] = copy.deepcopy(status)
    if decision.wake_in is not None:
        found.wake_in = min(found.wake_in or decision.wake_in, decision.wake_in)


def _unpin_when_default(found: Plan, world: World, uuid: str, template: JsonObject,
                        previous: Doc, now: datetime) -> None:
    """A complete template rollout: once its candidate is the default, remove its pins."""
    if world.templates.get(TEMPLATE_APP) != template:
        return
    for cluster, config in _configs(found, world).items():
        free = unpinned(uuid, config) if is_object(config) else None
        if free is not None:
            found.configs[cluster] = free
    found.statuses[uuid] = dict(previous) | {"promoted": True,
                                             "updatedAt": stamp(now)}
