"""Kubernetes Nodes → the ``hosts`` list of the Edge cluster status (pure functions)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

HOSTNAME_LABEL = "kubernetes.io/hostname"
CONTROL_PLANE_LABEL = "node-role.kubernetes.io/control-plane"
SPECIALISED_TAINT = "factoryplus.app.amrc.co.uk/specialised"


def host(node: Mapping[str, Any]) -> dict[str, Any]:
    """One node (its JSON form) as a host entry, as ACS reports it.

    ``hostname`` falls back to the node's name when the hostname label is missing (ACS
    would report nothing, which the status schema refuses). ``control_plane`` is true for
    the label's value ``"true"`` (k3s) and also ``""`` (kubeadm), which ACS misses.
    ``specialised`` is present
    only when the node carries the Factory+ specialised taint.
    """
    meta = node.get("metadata") or {}
    labels = meta.get("labels") or {}
    status = node.get("status") or {}
    info = status.get("nodeInfo") or {}
    conditions = status.get("conditions") or []
    entry: dict[str, Any] = {
        "hostname": str(labels.get(HOSTNAME_LABEL) or meta.get("name") or ""),
        "arch": str(info.get("architecture") or ""),
        "k8s_version": str(info.get("kubeletVersion") or ""),
        "control_plane": labels.get(CONTROL_PLANE_LABEL) in ("true", ""),
        "os_version": str(info.get("osImage") or ""),
        "ready": any(c.get("type") == "Ready" and c.get("status") == "True"
                     for c in conditions if isinstance(c, Mapping)),
    }
    for taint in (node.get("spec") or {}).get("taints") or []:
        if isinstance(taint, Mapping) and taint.get("key") == SPECIALISED_TAINT:
            entry["specialised"] = str(taint.get("value") or "")
            break
    return entry


def hosts(nodes: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Host entries of every node, sorted by hostname (so equal sets compare equal)."""
    found = [host(node) for node in nodes]
    return sorted((h for h in found if h["hostname"]), key=lambda h: h["hostname"])
