"""Kubernetes Nodes → the ``hosts`` list of the Edge cluster status (pure functions)."""

from __future__ import annotations

from collections.abc import Iterable

from fplus.jsontypes import Doc, as_list, as_object, is_object

from .report import Host

HOSTNAME_LABEL = "kubernetes.io/hostname"
CONTROL_PLANE_LABEL = "node-role.kubernetes.io/control-plane"
SPECIALISED_TAINT = "factoryplus.app.amrc.co.uk/specialised"


def host(node: Doc) -> Host:
    """One node (its JSON form) as a host entry, as ACS reports it.

    ``hostname`` falls back to the node's name when the hostname label is missing (ACS
    would report nothing, which the status schema refuses). ``control_plane`` is true for
    the label's value ``"true"`` (k3s) and also ``""`` (kubeadm), which ACS misses.
    ``specialised`` is present
    only when the node carries the Factory+ specialised taint.
    """
    meta = as_object(node.get("metadata"))
    labels = as_object(meta.get("labels"))
    status = as_object(node.get("status"))
    info = as_object(status.get("nodeInfo"))
    entry: Host = {
        "hostname": str(labels.get(HOSTNAME_LABEL) or meta.get("name") or ""),
        "arch": str(info.get("architecture") or ""),
        "k8s_version": str(info.get("kubeletVersion") or ""),
        "control_plane": labels.get(CONTROL_PLANE_LABEL) in ("true", ""),
        "os_version": str(info.get("osImage") or ""),
        "ready": any(c.get("type") == "Ready" and c.get("status") == "True"
                     for c in as_list(status.get("conditions")) if is_object(c)),
    }
    for taint in as_list(as_object(node.get("spec")).get("taints")):
        if is_object(taint) and taint.get("key") == SPECIALISED_TAINT:
            entry["specialised"] = str(taint.get("value") or "")
            break
    return entry


def hosts(nodes: Iterable[Doc]) -> list[Host]:
    """Host entries of every node, sorted by hostname (so equal sets compare equal)."""
    found = [host(node) for node in nodes]
    return sorted((h for h in found if h["hostname"]), key=lambda h: h["hostname"])
