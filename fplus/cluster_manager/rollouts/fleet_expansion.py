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

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime

from fplus.jsontypes import Doc, as_object, string_map

from ..model.cluster_config import targeted
from ..model.deployment_state import PROGRESSING, deployment_state
from ..model.edge_deployments import Deployment
from .fleet_entry import Fleet, member_uuid
from .rule import Look, advance
from .state import RolloutState, TargetState
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
    return (a.name, a.cluster, a.chart, a.hostname, dict(a.values or {}), a.fleet) == (
        b.name, b.cluster, b.chart, b.hostname, dict(b.values or {}), b.fleet)


def expand(fleets: Doc, configs: Doc, deployments: Doc, *, rollouts: Doc | None = None,
           edges: Doc | None = None, now: datetime | None = None) -> Plan:
    """The plan that brings ``deployments`` to what ``fleets`` want on ``configs``
    (paced by ``rollouts``, the rollout statuses, and ``edges``, the edges' reports)."""
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
        new = None
        if rollouts is not None and fleet.rollout is not None:
            new = _paced(plan, fleet, free, configs, existing, rollouts, edges or {},
                         now or datetime.now(UTC))
        for cluster in free:
            if new is None or cluster in new:
                _write(plan, fleet, cluster, mine[cluster], existing.get(mine[cluster]))
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


def _paced(plan: Plan, fleet: Fleet, clusters: list[str], configs: Doc,
           existing: Mapping[str, Deployment], rollouts: Doc,
           edges: Doc, now: datetime) -> frozenset[str]:
    """Which of ``clusters`` get ``fleet``'s current revision (its rollout's next status and
    wake-up time go into the plan)."""
    states: dict[str, TargetState] = {}
    current = set()
    for cluster in clusters:
        member = member_uuid(fleet.uuid, cluster)
        held = existing.get(member)
        if held is None or not _same(held, _desired(fleet, cluster, member, held)):
            states[cluster] = TargetState(PROGRESSING, "the new revision is not written yet",
                                          None)
        else:
            current.add(cluster)
            found = deployment_state(member, edges.get(cluster))
            states[cluster] = TargetState(found.state, found.message, found.since)
    labels = {c: string_map(as_object(configs[c]).get("labels")) for c in clusters}
    previous = rollouts.get(fleet.uuid)
    decision = advance(Look(fleet.uuid, fleet.rollout or Spec(), fleet.revision, clusters,
                            labels, RolloutState.parse(previous), states, now, fleet.request,
                            frozenset(current)))
    status = decision.status
    if status != previous:
        plan.rollouts[fleet.uuid] = status
    if decision.wake_in is not None:
        plan.wake_in = min(plan.wake_in or decision.wake_in, decision.wake_in)
    return decision.new


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


def _desired(fleet: Fleet, cluster: str, member: str, held: Deployment | None) -> Deployment:
    return Deployment(member, fleet.name, cluster, fleet.chart,
                      values=fleet.values_for(cluster) or None, fleet=fleet.uuid,
                      created_at=held.created_at if held is not None else None)


def _write(plan: Plan, fleet: Fleet, cluster: str, member: str,
           held: Deployment | None) -> None:
    desired = _desired(fleet, cluster, member, held)
    if held is None:
        plan.writes.append((desired, True))
    elif not _same(held, desired):
        plan.writes.append((desired, False))
