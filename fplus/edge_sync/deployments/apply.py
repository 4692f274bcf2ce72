"""Bring the edge's labelled objects to a :class:`~.render.Plan`: server-side apply + prune.

Only objects carrying ``app.kubernetes.io/managed-by: edge-sync.factoryplus.app.amrc.co.uk``
are ever listed or deleted, so objects made by anyone else (the cluster's own
``edge-cluster-<uuid>`` HelmRelease, the ``helm-charts`` GitRepository) are never touched.
Objects of a deployment that failed to render are kept, and so are the sources they use.
"""

from __future__ import annotations

import copy
import logging
from dataclasses import dataclass, field

from fplus.jsontypes import as_list, as_object, string_map, text

from ..kube import Kube, KubeObject
from .render import UUID_LABEL, Manifest, Plan, ResourceType

log = logging.getLogger(__name__)

MANAGER = "edge-sync.factoryplus.app.amrc.co.uk"
MANAGED_BY = "app.kubernetes.io/managed-by"
SELECTOR = f"{MANAGED_BY}={MANAGER}"
_SOURCE_KINDS = ("GitRepository", "HelmRepository", "OCIRepository", "Bucket")


@dataclass
class ApplyResult:
    """Names applied and deleted, by kind."""

    applied: dict[str, list[str]] = field(default_factory=dict)
    deleted: dict[str, list[str]] = field(default_factory=dict)
    kept: dict[str, list[str]] = field(default_factory=dict)


def _order(rtype: ResourceType) -> tuple[int, ResourceType]:
    """Sources first when applying (a HelmRelease finds its source), last when pruning."""
    return (0 if rtype.kind in _SOURCE_KINDS else 1, rtype)


def _name(obj: KubeObject) -> str | None:
    return text(as_object(obj.get("metadata")), "name")


def _labels(obj: KubeObject) -> dict[str, str]:
    return string_map(as_object(obj.get("metadata")).get("labels"))


def _source_ref(obj: KubeObject) -> tuple[str, str] | None:
    chart = as_object(as_object(obj.get("spec")).get("chart"))
    ref = as_object(as_object(chart.get("spec")).get("sourceRef"))
    kind = text(ref, "kind")
    return (kind, str(ref.get("name"))) if kind is not None else None


class Applier:
    """Applies plans into one namespace; not thread-safe (the reconciler serialises)."""

    def __init__(self, kube: Kube, namespace: str) -> None:
        self.kube = kube
        self.namespace = namespace

    def prepare(self, manifest: Manifest) -> KubeObject:
        """The manifest in our namespace with our managed-by label (and the namespace of
        each HelmRelease it depends on: ours)."""
        obj = copy.deepcopy(manifest)
        meta = as_object(obj.get("metadata"))
        labels = as_object(meta.get("labels"))
        labels[MANAGED_BY] = MANAGER
        meta.update(namespace=self.namespace, labels=labels)
        obj["metadata"] = meta
        for ref in as_list(as_object(obj.get("spec")).get("dependsOn")):
            if isinstance(ref, dict):
                ref.setdefault("namespace", self.namespace)  # the HelmReleases it waits on
        return obj

    def apply(self, plan: Plan) -> ApplyResult:
        """List every managed type, apply what is wanted, then delete what is not.

        Raises on the first failed Kubernetes call (the caller retries the whole plan;
        every step is idempotent).
        """
        types = sorted(plan.types, key=_order)
        plurals = {t: self.kube.resource(t.api_version, t.kind)[0] for t in types}
        existing = {t: self.kube.list_objects(t.api_version, plurals[t], self.namespace,
                                              SELECTOR) for t in types}
        kept = self._kept(plan, existing)
        result = ApplyResult()
        for rtype in types:
            for applied, manifest in sorted(plan.manifests.get(rtype, {}).items()):
                self.kube.apply(rtype.api_version, plurals[rtype], self.namespace,
                                self.prepare(manifest), MANAGER)
                result.applied.setdefault(rtype.kind, []).append(applied)
        for rtype in reversed(types):
            wanted = plan.manifests.get(rtype, {})
            for obj in existing[rtype]:
                name = _name(obj)
                if _labels(obj).get(MANAGED_BY) != MANAGER or not name or name in wanted:
                    continue  # label selectors may be ignored: check the label ourselves
                if (rtype.kind, name) in kept:
                    result.kept.setdefault(rtype.kind, []).append(name)
                    continue
                log.info("deployments: deleting %s %s/%s", rtype.kind, self.namespace, name)
                self.kube.delete(rtype.api_version, plurals[rtype], self.namespace, name)
                result.deleted.setdefault(rtype.kind, []).append(name)
        return result

    @staticmethod
    def _kept(plan: Plan, existing: dict[ResourceType, list[KubeObject]]
              ) -> set[tuple[str, str]]:
        """Objects of failed deployments, and the sources those objects reference."""
        kept: set[tuple[str, str]] = set()
        for rtype, objs in existing.items():
            for obj in objs:
                if _labels(obj).get(UUID_LABEL) in plan.failed:
                    kept.add((rtype.kind, str(_name(obj))))
                    ref = _source_ref(obj)
                    if ref is not None:
                        kept.add(ref)
        return kept
