"""The fleet deployment API: create, read (with the roll-up), list, merge-patch and delete
fleet deployments (:mod:`.fleet_entry`).

The service writes only the fleet deployment's object, Info name and entry; the leader
expands it (:mod:`.fleet_kind`). Every refusal is a 422 naming the field, with nothing
written: a malformed body, a chart that is not a Helm chart template or is a system chart
(refused as per-cluster deployments refuse it), a listed cluster that is not configured,
a name another deployment already holds on a cluster it targets
(found by running the expansion with the new entry, as the newest), and a deployment that
could not work on a cluster it reaches (its chart not in the shared charts repo, values its
``values.schema.json`` refuses: :mod:`..changes`, naming the cluster). ``preview_create`` and
``preview_patch`` answer what the change would do (``?dryRun``), writing nothing. A read
runs the same expansion to say which clusters it targets and where it meets a conflict, and
rolls up each deployment's state (:mod:`..model.deployment_state`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import cast

import json_merge_patch

from fplus.config_store import uuids
from fplus.config_store.client import ConfigStoreClient
from fplus.config_store.client import PreconditionFailed as StaleEntry
from fplus.config_store.client import Unprocessable as EntryRefused
from fplus.jsontypes import Doc, JsonObject, as_object, is_object

from ..changes.preview import Assessed, Changes, Target, answer, refusals
from ..changes.refusals import refuse
from ..changes.rendered import deployment_refusal
from ..model.apps_and_roles import CONFIG_APP, EDGE_APP
from ..model.deployment_state import FAILED, PROGRESSING, STATES, deployment_state
from ..model.deployment_values import LAYER_KEYS
from ..model.edge_deployments import DEPLOYMENT_APP
from ..services.deployments.system_charts import is_system_chart, system_chart_refusal
from ..services.errors import NotFound, PreconditionFailed, Unprocessable
from ..services.fleet.throttled_counts import ThrottledCounts
from ..services.named_entries import create_named_entry
from .fleet_entry import (
    FLEET_APP,
    FLEET_CLASS,
    INTERNAL,
    Fleet,
    FleetEntry,
    member_uuid,
    request_errors,
)
from .fleet_expansion import Plan, expand
from .fleet_order import fleet_order_refusal
from .preview_plan import preview_plan

log = logging.getLogger(__name__)
FIELDS = ("name", "chart", "values", "selector", "clusters", "overrides", "rollout",
          "createdAt", "rolloutRequest", "dependsOn", "driftDetection", *LAYER_KEYS)
_DEPLOYMENT_FIELDS = ("name", "cluster", "chart", "hostname", "values", "fleetDeployment",
                      "createdAt", "dependsOn", "driftDetection")
STALE = "the fleet deployment changed since it was read (If-Match); read it again"
_EDGE_FIELDS = {"deployments": "deployments", "flux": "flux"}


@dataclass
class Fleetwide:
    """One read of everything a roll-up rests on."""

    fleets: dict[str, object]
    configs: dict[str, object]
    deployments: dict[str, object]
    edges: dict[str, object]

    def plan(self) -> Plan:
        return expand(self.fleets, self.configs, self.deployments)


def read_fleetwide(cs: ConfigStoreClient) -> Fleetwide:
    """Fleet deployments, cluster configurations, Edge deployments and edge reports: four
    searches, whatever the number of clusters."""
    select = {k: k for k in FIELDS}
    return Fleetwide(
        as_object(cs.search(FLEET_APP, {}, select)),
        as_object(cs.search(CONFIG_APP, {}, {"name": "name", "namespace": "namespace",
                                             "labels": "labels"})),
        as_object(cs.search(DEPLOYMENT_APP, {}, {k: k for k in _DEPLOYMENT_FIELDS})),
        as_object(cs.search(EDGE_APP, {}, _EDGE_FIELDS)))


def _states(fleet: str, world: Fleetwide,
            plan: Plan) -> tuple[dict[str, int], list[dict[str, object]]]:
    """One fleet deployment's counts by state and the state of each of its clusters."""
    counts = dict.fromkeys(STATES, 0)
    clusters: list[dict[str, object]] = []
    conflicts = plan.conflicts.get(fleet, {}) | plan.failures.get(fleet, {})
    for cluster, member in sorted(plan.targets.get(fleet, {}).items()):
        commit: str | None = None
        message: str | None
        drifted = False
        if cluster in conflicts:
            state, message = FAILED, conflicts[cluster]
        elif member not in world.deployments:
            state, message = PROGRESSING, "the Cluster Manager has not written it yet"
        else:
            found = deployment_state(member, world.edges.get(cluster))
            state, message, commit = found.state, found.message, found.commit
            drifted = found.drifted
        counts[state] += 1
        config = as_object(world.configs.get(cluster))
        clusters.append({"cluster": cluster, "name": config.get("name"), "deployment": member,
                         "state": state, "message": message, "commit": commit,
                         "drifted": drifted})
    return counts, clusters


def rollup(fleet: str, world: Fleetwide, plan: Plan) -> dict[str, object]:
    """``{total, ready, progressing, failed, unknown, drifted, clusters: [...]}`` of one
    fleet deployment (and ``error`` when its entry cannot be expanded); ``drifted`` counts
    the clusters whose edge reports its deployment drifted, whatever their state."""
    counts, clusters = _states(fleet, world, plan)
    view: dict[str, object] = {"total": len(clusters), **counts,
                               "drifted": sum(1 for c in clusters if c["drifted"]),
                               "clusters": clusters}
    if fleet in plan.errors:
        view["error"] = plan.errors[fleet]
    return view


def _head(fleet: str, entry: object) -> dict[str, object]:
    """``{uuid, name, chart, spec}``: the entry whole in ``spec`` (its ``clusters`` is the
    list given; the view's ``clusters`` is the roll-up)."""
    found = as_object(entry)
    return {"uuid": fleet, "name": found.get("name"), "chart": found.get("chart"),
            "spec": entry}


class FleetService:
    """Create, read, list, patch and delete fleet deployments."""

    def __init__(self, cs: ConfigStoreClient, changes: Changes) -> None:
        self.cs, self.changes = cs, changes

    def _new(self, body: object, fleet: str) -> dict[str, object]:
        entry = self._checked(body, fleet)
        entry["createdAt"] = datetime.now(UTC).isoformat(timespec="microseconds").replace(
            "+00:00", "Z")
        self._check_conflicts(fleet, entry)
        return entry

    def preview_create(self, body: object, fleet: str) -> dict[str, object]:
        """What creating fleet deployment ``fleet`` from ``body`` would do; writes nothing."""
        return self._preview(fleet, self._new(body, fleet))

    def _preview(self, fleet: str, entry: Doc) -> dict[str, object]:
        world = read_fleetwide(self.cs)
        assessed = self._assessed(world, fleet, entry, compare=True)
        plan = preview_plan(self.cs, entry.get("rollout"), [a.target.uuid for a in assessed
                                                            if a.target.deployments_after],
                            {c: as_object(e) for c, e in world.configs.items()},
                            stale_after=self.changes.settings.edge_stale_after)
        return answer(assessed, plan)

    def _assessed(self, world: Fleetwide, fleet: str, entry: Doc,
                  compare: bool) -> list[Assessed]:
        """Each cluster whose Edge deployment of ``fleet`` the new ``entry`` adds, changes
        or removes, checked (and, to ``compare``, its entries before and after)."""
        plan = expand(world.fleets | {fleet: entry}, world.configs, world.deployments)
        writes = {d.uuid: d.entry() for d, _ in plan.writes}
        parsed = Fleet.parse(fleet, entry)
        inputs = self.changes.inputs()
        found = []
        for cluster in sorted(world.configs):
            member = member_uuid(fleet, cluster)
            old = _stored(world.deployments.get(member))
            new = writes.get(member, None if member in plan.removals else old)
            if old == new:
                continue
            name = str(as_object(world.configs[cluster]).get("name"))
            refused = None if new is None or isinstance(parsed, str) else deployment_refusal(
                inputs, parsed.chart, cluster, name,
                cast(JsonObject, as_object(new.get("values"))))
            found.append(Target(cluster, name, deployments_before=_named(old),
                                deployments_after=_named(new), refused=refused))
        return self.changes.assess(found, compare=compare, inputs=inputs)

    def _check_reach(self, fleet: str, entry: Doc) -> None:
        """422 naming each cluster on which the deployment ``entry`` could not work."""
        refuse(refusals(self._assessed(read_fleetwide(self.cs), fleet, entry,
                                       compare=False)))

    def create(self, body: object, fleet: str) -> dict[str, object]:
        """Create fleet deployment ``fleet`` (a new uuid) from ``body``."""
        entry = self._new(body, fleet)
        self._check_reach(fleet, entry)
        create_named_entry(self.cs, FLEET_CLASS, FLEET_APP, fleet, str(entry["name"]), entry)
        log.info("fleet deployment %s (%s): created", fleet, entry["name"])
        return self.get(fleet)[0]

    def _checked(self, body: object, fleet: str) -> dict[str, object]:
        """``body`` if it can be stored; else 422 naming the first refused field."""
        errors = request_errors(body)
        if not errors and is_object(body):
            entry = cast(FleetEntry, body)  # request_errors checked every field
            chart = entry["chart"]
            if self.cs.get_config(uuids.App.HelmChartTemplate, chart) is None:
                errors["chart"] = f"{chart} is not a Helm chart template"
            elif is_system_chart(self.cs, chart):
                errors["chart"] = system_chart_refusal(chart)
            unknown = [c for c in entry.get("clusters", [])
                       if self.cs.get_config(CONFIG_APP, c) is None]
            if unknown:
                errors["clusters"] = f"not clusters: {', '.join(unknown)}"
        if errors or not is_object(body):
            field, why = next(iter(errors.items()))
            raise Unprocessable(f"{field}: {why}" if field else why)
        return {k: body[k] for k in FIELDS if k in body}

    def _check_conflicts(self, fleet: str, entry: Doc) -> None:
        """422 (``name``) if ``entry`` would meet a deployment of its name on a cluster."""
        world = read_fleetwide(self.cs)
        world.fleets[fleet] = dict(entry) | {"createdAt": "\uffff"}  # the newest: loses ties
        plan = world.plan()
        conflicts = plan.conflicts.get(fleet)
        if conflicts:
            cluster, why = sorted(conflicts.items())[0]
            raise Unprocessable(f"name: on cluster {cluster}, {why}")
        unordered = fleet_order_refusal(fleet, world.fleets, world.deployments, plan.targets)
        if unordered is not None:
            raise Unprocessable(unordered)

    def _entry(self, fleet: str) -> tuple[dict[str, object], str | None]:
        entry, etag = self.cs.get_config_with_etag(FLEET_APP, fleet)
        if not is_object(entry):
            raise NotFound(f"unknown fleet deployment {fleet}")
        return entry, etag

    def get(self, fleet: str) -> tuple[dict[str, object], str | None]:
        """The fleet deployment with its roll-up, and its entry's etag."""
        entry, etag = self._entry(fleet)
        world = read_fleetwide(self.cs)
        world.fleets[fleet] = entry
        return {**_head(fleet, entry), **rollup(fleet, world, world.plan())}, etag

    def list(self) -> list[dict[str, object]]:
        """Every fleet deployment with its counts (without the per-cluster list)."""
        world = read_fleetwide(self.cs)
        plan = world.plan()
        found = []
        for fleet in sorted(world.fleets):
            view = rollup(fleet, world, plan)
            del view["clusters"]
            found.append({**_head(fleet, world.fleets[fleet]), **view})
        return found

    def preview_patch(self, fleet: str, patch: object,
                      if_match: str | None = None) -> dict[str, object]:
        """What :meth:`patch` would do; writes nothing."""
        return self._preview(fleet, self._patched(fleet, patch, if_match)[0])

    def _patched(self, fleet: str, patch: object,
                 if_match: str | None) -> tuple[dict[str, object], Doc, str | None]:
        """The entry ``patch`` makes (checked), the current one and its etag."""
        if not is_object(patch):
            raise Unprocessable("the patch must be a JSON object (RFC 7386 merge-patch)")
        entry, etag = self._entry(fleet)
        if if_match is not None and if_match != etag:
            raise PreconditionFailed(STALE)
        errors = request_errors(patch, partial=True)
        for internal in ("createdAt", "rolloutRequest"):
            if internal in patch:
                errors[internal] = f"{internal} cannot be changed (it is the Cluster Manager's)"
        if errors:
            field, why = next(iter(errors.items()))
            raise Unprocessable(f"{field}: {why}" if field else why)
        merged = json_merge_patch.merge(entry, patch)
        updated = self._checked({k: v for k, v in merged.items() if k not in INTERNAL}, fleet)
        updated |= {k: entry[k] for k in INTERNAL if k in entry}
        self._check_conflicts(fleet, updated)
        return updated, entry, etag

    def patch(self, fleet: str, patch: object,
              if_match: str | None = None) -> dict[str, object]:
        """Merge-patch the entry (``createdAt`` kept); 412 if ``if_match`` is stale."""
        updated, entry, etag = self._patched(fleet, patch, if_match)
        self._check_reach(fleet, updated)
        try:
            self.cs.put_config(FLEET_APP, fleet, updated, if_match=etag)
        except StaleEntry:
            raise PreconditionFailed(STALE) from None
        except EntryRefused as exc:
            raise Unprocessable(f"the Config Store refused the entry: {exc}") from exc
        if updated["name"] != entry.get("name"):
            self.cs.set_name(fleet, str(updated["name"]))
        log.info("fleet deployment %s: changed", fleet)
        return self.get(fleet)[0]

    def delete(self, fleet: str) -> None:
        """Delete it; the leader then removes every deployment it made."""
        self._entry(fleet)
        self.cs.delete_config(FLEET_APP, fleet)
        self.cs.delete_object(fleet)
        log.info("fleet deployment %s: deleted", fleet)


def _stored(entry: object) -> dict[str, object] | None:
    """A searched Edge deployment entry without the fields it does not hold."""
    if not is_object(entry):
        return None
    return {k: v for k, v in entry.items() if v is not None}


def _named(entry: Doc | None) -> dict[str, object]:
    """``{its name: entry}`` (nothing for None)."""
    return {} if entry is None else {str(entry.get("name")): entry}


class FleetStates(ThrottledCounts):
    """``counts()``: fleet deployments' Edge deployments by state (for ``/metrics``),
    recomputed at most every ``ttl`` seconds."""

    def __init__(self, cs: ConfigStoreClient, ttl: float = 15.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.cs = cs
        super().__init__(self._count, STATES, "fleet deployments by state", ttl, clock)

    def _count(self) -> dict[str, int]:
        world = read_fleetwide(self.cs)
        plan = world.plan()
        fresh = dict.fromkeys(STATES, 0)
        for fleet in world.fleets:
            counts, _ = _states(fleet, world, plan)
            for state in STATES:
                fresh[state] += counts[state]
        return fresh
