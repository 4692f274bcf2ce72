"""An Edge deployment's ``dependsOn`` as its HelmReleases' ``spec.dependsOn`` (pure).

A deployment names the deployments of its cluster it waits on; each becomes the
HelmReleases that deployment renders to (``{name}``; the applier adds the namespace, theirs
and its own), so helm-controller installs and upgrades it only once those are Ready. A
deployment that names no deployment of the cluster, one that could not be rendered, or one
that leads back to itself cannot be ordered: it fails (and so does whatever waits on it),
with the reason, instead of being installed out of order.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from fplus.jsontypes import as_object

from .entry import RenderError, parse

Manifests = dict[str, dict[str, object]]
"""Rendered manifests by name (one kind)."""


def add_order(releases: dict[str, list[str]], failed: dict[str, str],
              kinds: Iterable[Manifests], deployments: Mapping[str, object]) -> None:
    """Give each rendered deployment's HelmReleases (in ``kinds``, found by the names
    ``releases`` lists) the ``spec.dependsOn`` its entry asks for; a deployment that cannot
    be ordered moves from ``releases`` (its manifests dropped) to ``failed``."""
    needs: dict[str, tuple[str, ...]] = {}
    by_name: dict[str, str] = {}
    for uuid, entry in deployments.items():
        try:
            found = parse(entry)
        except RenderError:
            continue
        needs[uuid] = found.depends_on
        by_name.setdefault(found.name, uuid)
    verdict: dict[str, str | None] = {}

    def why_not(uuid: str, path: tuple[str, ...]) -> str | None:
        if uuid in verdict:
            return verdict[uuid]
        if uuid in path:
            return "dependsOn makes a cycle"
        if uuid in failed:
            return failed[uuid]
        why = None
        for name in needs.get(uuid, ()):
            other = by_name.get(name)
            if other is None:
                why = f"dependsOn: no deployment {name!r} on this cluster"
            elif (theirs := why_not(other, (*path, uuid))) is not None:
                why = f"waits on {name!r}, which cannot be installed: {theirs}"
            if why is not None:
                break
        verdict[uuid] = why
        return why

    kinds = list(kinds)
    for uuid in sorted(releases):
        if not needs.get(uuid):
            continue
        why = why_not(uuid, ())
        if why is not None:
            failed[uuid] = why
            for name in releases.pop(uuid):
                for manifests in kinds:
                    manifests.pop(name, None)
            continue
        refs = [{"name": r} for name in needs[uuid] for r in releases.get(by_name[name], [])]
        for name in releases[uuid]:
            for manifests in kinds:
                if name in manifests:
                    as_object(manifests[name].setdefault("spec", {}))["dependsOn"] = refs
