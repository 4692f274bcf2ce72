"""A fleet deployment's ``dependsOn`` checked on every cluster it targets (pure).

On each targeted cluster the names it depends on must be those of deployments there: the
cluster's own Edge deployments and those the fleet deployments targeting it make (written
yet or not), and together they must not make a cycle. One pass over the deployments, then
one graph walk per cluster (the names ``dependsOn`` reaches, not the whole fleet).
"""

from __future__ import annotations

from collections.abc import Mapping

from fplus.jsontypes import Doc, as_object, text

from ..model.deployment_order import order_refusal
from ..model.edge_deployments import Deployment, ordering


def fleet_order_refusal(fleet: str, fleets: Doc, deployments: Doc,
                        targets: Mapping[str, Mapping[str, str]]) -> str | None:
    """Why ``fleet``'s ``dependsOn`` cannot be met on a cluster it targets (naming the
    cluster), or None. ``targets``: fleet deployment -> {cluster: its member uuid} (the
    expansion's); ``fleets`` and ``deployments``: the entries by uuid."""
    entry = as_object(fleets.get(fleet))
    name, (needs, _) = text(entry, "name"), ordering(entry)
    if name is None or not needs:
        return None
    members = {m for found in targets.values() for m in found.values()}
    graphs: dict[str, dict[str, tuple[str, ...]]] = {}
    for uuid, stored in deployments.items():
        deployment = Deployment.parse(uuid, stored)
        if deployment is not None and uuid not in members:
            graphs.setdefault(deployment.cluster, {})[deployment.name] = deployment.depends_on
    for other, found in targets.items():
        other_entry = as_object(fleets.get(other))
        other_name = text(other_entry, "name")
        if other_name is None:
            continue
        for cluster in found:
            graphs.setdefault(cluster, {})[other_name] = ordering(other_entry)[0]
    for cluster in sorted(targets.get(fleet, {})):
        graph = graphs.get(cluster, {}) | {name: needs}
        if (why := order_refusal(graph, name)) is not None:
            return f"on cluster {cluster}, {why}"
    return None
