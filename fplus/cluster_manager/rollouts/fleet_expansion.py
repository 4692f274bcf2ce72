"""Which Edge deployments the fleet deployments want: a pure function of the fleet
deployment entries, the cluster configuration entries and the Edge deployment entries.

:func:`expand` answers a :class:`Plan`: the deployments to write (new or changed), those to
remove, and per fleet deployment the clusters it targets, the conflicts it meets and why it
cannot be expanded at all. The leader applies the plan (:mod:`.fleet_kind`); the API reads
the same plan to report a fleet deployment's state and to refuse a conflicting one at
creation. The rules:

- A fleet deployment targets every configured cluster (an entry in the configuration app:
  a cluster being deleted has none) whose ``labels`` its selector matches, and every listed
  one that is configured.
- On each it owns exactly one deployment, at :func:`~.fleet_entry.member_uuid`.
- It never touches a deployment it does not own. A name already used on a cluster by
  another deployment (a person's, or another fleet deployment's) is a conflict: nothing is
  written there and the conflict is reported. Of two fleet deployments wanting one name on
  one cluster where neither exists yet, the older (``createdAt``, then uuid) gets it.
- A deployment it owns on a cluster it no longer targets, or owned by a fleet deployment
  that no longer exists, is removed. One whose fleet deployment is malformed is kept as it
  is (a broken entry must not uninstall an application everywhere).
- Given the rollout statuses and the edges' reports (the leader's call), a fleet deployment
  with ``rollout`` writes its current revision only to the clusters :func:`.rule.advance`
  says get it; its other deployments stay as they are, and the rollout's next state is in
  the plan. A step's cluster counts as ready only once its deployment holds the new
  revision and its edge reports it ready (since when: :mod:`.rule`). Without them (the
  API's reads), every target gets the current revision.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime

from fplus.jsontypes import Doc, JsonObject, as_object, json_object, string_map

from ..model.cluster_config import targeted
from ..model.deployment_state import FAILED, PROGRESSING, READY, deployment_state
from ..model.deployment_values import ClusterMeta, ValuesError
from ..model.edge_deployments import Deployment, ordering
from .fleet_entry import Fleet, layers, member_uuid
from .gates_input import GateInputs
from .rule import Look, advance
from .state import ROLLED_BACK, RolloutState, TargetState
from .steps import Spec


@dataclass
class Plan:
    """What to change, and what each fleet deployment targets."""

    writes: list[tuple[Deployment, bool]] = field(default_factory=list)
    """``(deployment, new)``: create (``new``) or replace."""
    removals: list[str] = field(default_factory=list)
    targets: dict[str, dict[str, str]] = field(default_factory=dict)
    """Fleet deployment -> {cluster: the uuid of its deployment there}."""
    conflicts: dict[str, dict[str, str]] = field(default_factory=dict)
    """Fleet deployment -> {cluster: why it has no deployment there}."""
    errors: dict[str, str] = field(default_factory=dict)
    """Fleet deployment -> why it cannot be expanded (its deployments are left alone)."""
    failures: dict[str, dict[str, str]] = field(default_factory=dict)
    """Fleet deployment -> {cluster: why its values there cannot be made (a placeholder of
    the cluster without a value); its deployment there is left as it is}."""
    rollouts: dict[str, Mapping[str, object]] = field(default_factory=dict)
    """Fleet deployment -> its rollout's new status (only those that changed)."""
    rollout_removals: list[str] = field(default_factory=list)
    """Rollout statuses of fleet deployments that are gone or have no ``rollout``."""
    wake_in: float | None = None
    """Seconds until a rollout's pause ends (look again then)."""


def targets(fleet: Fleet, configs: Doc) -> list[str]:
    """The configured clusters ``fleet`` targets, sorted."""
    return targeted(configs, fleet.selector, set(fleet.clusters))


def _same(a: Deployment, b: Deployment) -> bool:
    """Equal but for the creation time."""
    return (a.name, a.cluster, a.chart, a.hostname, dict(a.values or {}), a.fleet,
            a.depends_on, a.drift) == (
        b.name, b.cluster, b.chart, b.hostname, dict(b.values or {}), b.fleet,
        b.depends_on, b.drift)


def expand(fleets: Doc, configs: Doc, deployments: Doc, *, rollouts: Doc | None = None,
           edges: Doc | None = None, now: datetime | None = None,
           gate_inputs: GateInputs | None = None) -> Plan:
    """The plan that brings ``deployments`` to what ``fleets`` want on ``configs``
    (paced by ``rollouts``, the rollout statuses, ``edges``, the edges' reports, and the
    maintenance windows and staleness ``gate_inputs`` gives)."""
    plan = Plan()
    existing = {uuid: d for uuid, entry in deployments.items()
                if (d := Deployment.parse(uuid, entry)) is not None}
    names: dict[tuple[str, str], set[str]] = {}
    for d in existing.values():
        names.setdefault((d.cluster, d.name), set()).add(d.uuid)
    parsed: list[Fleet] = []
    for uuid, entry in fleets.items():
        fleet = Fleet.parse(uuid, entry)
        if isinstance(fleet, str):
            plan.errors[uuid] = fleet
        else:
            parsed.append(fleet)
    wanted: set[str] = set()
    for fleet in sorted(parsed, key=lambda f: (f.created_at, f.uuid)):
        mine = plan.targets.setdefault(fleet.uuid, {})
        free = []
        for cluster in targets(fleet, configs):
            member = member_uuid(fleet.uuid, cluster)
            mine[cluster] = member
            why = _conflict(fleet, cluster, member, existing, names)
            if why is not None:
                plan.conflicts.setdefault(fleet.uuid, {})[cluster] = why
                if member not in existing or existing[member].fleet != fleet.uuid:
                    continue
            wanted.add(member)
            names.setdefault((cluster, fleet.name), set()).add(member)
            free.append(cluster)
        new, restore = None, Restore()
        if rollouts is not None and fleet.rollout is not None:
            when = now or datetime.now(UTC)
            new, restore = _paced(plan, fleet, free, configs, existing, rollouts, edges or {},
                                  when, gate_inputs or GateInputs(now=when))
        for cluster in free:
            member = mine[cluster]
            meta = ClusterMeta.of(cluster, configs.get(cluster))
            if new is None or cluster in new:
                _write(plan, fleet, meta, member, existing.get(member))
            elif cluster in restore.clusters and restore.fleet is not None:
                _write(plan, restore.fleet, meta, member, existing.get(member))
            elif cluster in restore.clusters and member in existing:
                wanted.discard(member)  # there was none before the rollout
    for d in existing.values():
        if d.fleet is not None and d.uuid not in wanted and d.fleet not in plan.errors:
            plan.removals.append(d.uuid)
    plan.removals.sort()
    if rollouts is not None:
        plan.rollout_removals = sorted(
            f for f in rollouts if f not in plan.errors
            and (f not in fleets or f not in plan.targets
                 or as_object(fleets[f]).get("rollout") is None))
    return plan


@dataclass(frozen=True)
class Restore:
    """The clusters a rolled back rollout returns to ``fleet`` (None: to no deployment)."""

    clusters: frozenset[str] = frozenset()
    fleet: Fleet | None = None


def spec_of(fleet: Fleet) -> JsonObject:
    """What a fleet deployment's revision carries, as its rollout state records it."""
    found: JsonObject = json.loads(json.dumps({
        "name": fleet.name, "chart": fleet.chart, "values": dict(fleet.values),
        "overrides": {c: dict(v) for c, v in fleet.overrides.items()},
        "customizations": [{"selector": dict(c.selector), "values": dict(c.values)}
                           for c in fleet.customizations],
        "profiles": {p: dict(v) for p, v in fleet.profiles.items()},
        "profileLabel": fleet.profile_label, "dependsOn": list(fleet.depends_on),
        "driftDetection": fleet.drift}))
    return found


def _previous(fleet: Fleet, before: RolloutState | None,
              existing: Mapping[str, Deployment]) -> JsonObject | None:
    """``{spec}`` of the revision before ``fleet``'s (``spec`` null: it had none), as known
    when its rollout begins; None if unknown."""
    if before is not None and before.revision == fleet.revision:
        return before.previous
    if before is not None and before.state == ROLLED_BACK:
        return before.previous
    if before is not None and before.spec is not None:
        return {"spec": before.spec}
    if not any(d.fleet == fleet.uuid for d in existing.values()):
        return {"spec": None}
    return None


def _restored(fleet: Fleet, previous: JsonObject | None) -> Fleet | None:
    spec = json_object((previous or {}).get("spec"))
    if not spec:
        return None
    customizations, profiles, profile_label = layers(spec)
    return dataclasses.replace(fleet, name=str(spec.get("name") or fleet.name),
                               chart=str(spec.get("chart") or fleet.chart),
                               values=json_object(spec.get("values")),
                               overrides={c: json_object(v) for c, v in
                                          json_object(spec.get("overrides")).items()},
                               customizations=customizations, profiles=profiles,
                               profile_label=profile_label, depends_on=ordering(spec)[0],
                               drift=ordering(spec)[1])


def _paced(plan: Plan, fleet: Fleet, clusters: list[str], configs: Doc,
           existing: Mapping[str, Deployment], rollouts: Doc,
           edges: Doc, now: datetime,
           gate_inputs: GateInputs) -> tuple[frozenset[str], Restore]:
    """Which of ``clusters`` get ``fleet``'s current revision, and which go back to the
    previous one (its rollout's next status and wake-up time go into the plan)."""
    states: dict[str, TargetState] = {}
    reported: dict[str, str] = {}
    current = set()
    for cluster in clusters:
        member = member_uuid(fleet.uuid, cluster)
        held = existing.get(member)
        found = deployment_state(member, edges.get(cluster))
        if found.state == READY and found.since is not None:
            reported[cluster] = found.since
        desired = _desired(fleet, ClusterMeta.of(cluster, configs.get(cluster)), member, held)
        if isinstance(desired, str):
            states[cluster] = TargetState(FAILED, desired, None)
        elif held is None or not _same(held, desired):
            states[cluster] = TargetState(PROGRESSING, "the new revision is not written yet",
                                          None)
        else:
            current.add(cluster)
            states[cluster] = TargetState(found.state, found.message, found.since)
    labels = {c: string_map(as_object(configs[c]).get("labels")) for c in clusters}
    previous = rollouts.get(fleet.uuid)
    before = RolloutState.parse(previous)
    earlier = _previous(fleet, before, existing)
    decision = advance(Look(fleet.uuid, fleet.rollout or Spec(), fleet.revision, clusters,
                            labels, before, states, now, fleet.request,
                            frozenset(current), gate_inputs.offline(clusters, edges),
                            gate_inputs.closed(labels), earlier is not None, reported))
    decision.state.spec, decision.state.previous = spec_of(fleet), earlier
    status = decision.status
    if status != previous:
        plan.rollouts[fleet.uuid] = status
    if decision.wake_in is not None:
        plan.wake_in = min(plan.wake_in or decision.wake_in, decision.wake_in)
    return decision.new, Restore(decision.restore, _restored(fleet, earlier))


def _conflict(fleet: Fleet, cluster: str, member: str, existing: Mapping[str, Deployment],
              names: Mapping[tuple[str, str], set[str]]) -> str | None:
    """Why ``fleet`` may not (or should not alone) have ``member`` on ``cluster``."""
    held = existing.get(member)
    if held is not None and held.fleet != fleet.uuid:
        return (f"deployment {member} exists but is not this fleet deployment's; it is left "
                "as it is")
    others = sorted(o for o in names.get((cluster, fleet.name), set()) - {member}
                    if o not in existing or existing[o].fleet != fleet.uuid)
    if not others:
        return None
    holder = existing.get(others[0])
    if holder is None:
        whose = "an older fleet deployment's"
    elif holder.fleet:
        whose = f"fleet deployment {holder.fleet}'s"
    else:
        whose = "a per-cluster deployment"
    return (f"the name {fleet.name!r} is already used on this cluster by deployment "
            f"{others[0]} ({whose}); nothing is deployed here until it is renamed or removed")


def _desired(fleet: Fleet, cluster: ClusterMeta, member: str,
             held: Deployment | None) -> Deployment | str:
    """The deployment ``fleet`` wants on ``cluster``, or why its values cannot be made."""
    try:
        values = fleet.values_for(cluster)
    except ValuesError as exc:
        return str(exc)
    return Deployment(member, fleet.name, cluster.uuid, fleet.chart, values=values or None,
                      fleet=fleet.uuid,
                      created_at=held.created_at if held is not None else None,
                      depends_on=fleet.depends_on, drift=fleet.drift)


def _write(plan: Plan, fleet: Fleet, cluster: ClusterMeta, member: str,
           held: Deployment | None) -> None:
    desired = _desired(fleet, cluster, member, held)
    if isinstance(desired, str):
        plan.failures.setdefault(fleet.uuid, {})[cluster.uuid] = desired
    elif held is None:
        plan.writes.append((desired, True))
    elif not _same(held, desired):
        plan.writes.append((desired, False))
