"""Which deployments of one cluster wait on which (``dependsOn``), checked (pure).

A cluster's deployments form a graph by name; a deployment's ``dependsOn`` must name
deployments of its cluster, and must not lead back to itself. :func:`order_refusal` says
why a graph is refused, naming the unknown deployment or the cycle.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence


def order_refusal(graph: Mapping[str, Sequence[str]], start: str) -> str | None:
    """Why the deployments ``start`` depends on (directly or not) in ``graph`` (name ->
    the names it depends on) cannot be ordered: a name not in ``graph``, or a cycle; None
    when they can."""
    path: list[str] = []
    done: set[str] = set()

    def visit(name: str) -> str | None:
        if name in path:
            cycle = [*path[path.index(name):], name]
            return f"dependsOn makes a cycle: {' -> '.join(cycle)}"
        if name in done:
            return None
        path.append(name)
        for need in graph.get(name, ()):
            if need not in graph:
                return (f"dependsOn: {name!r} depends on {need!r}, which is no "
                        "deployment of the cluster")
            if (why := visit(need)) is not None:
                return why
        path.pop()
        done.add(name)
        return None

    return visit(start)
