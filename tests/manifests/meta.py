"""ObjectMeta rules the API server enforces but no JSON Schema states (apimachinery validation).

Neither the CRD schemas (``metadata: {type: object}``) nor kubernetes-validate's ObjectMeta
schema check name, namespace or label syntax, so these are checked here for every object.
"""

from __future__ import annotations

import re
from typing import Any

_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_LABEL = re.compile(_LABEL)
DNS1123_SUBDOMAIN = re.compile(rf"{_LABEL}(\.{_LABEL})*")
_QUALIFIED_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
CONFIGMAP_KEY = re.compile(r"[-._a-zA-Z0-9]+")

# Kinds we emit that are cluster-scoped (custom kinds take their scope from the CRD).
CLUSTER_SCOPED_CORE = frozenset({"Namespace", "ClusterRole", "ClusterRoleBinding"})
# Kinds whose names must be DNS-1123 labels rather than subdomains.
LABEL_NAMED = frozenset({"Namespace", "Service"})
_ALLOWED_META = frozenset({"name", "namespace", "labels", "annotations"})


def qualified_name_errors(key: str) -> list[str]:
    """Errors of a label/annotation key: ``[prefix/]name``, prefix a DNS-1123 subdomain."""
    prefix, _, name = key.rpartition("/")
    errors = []
    if "/" in key and (not prefix or len(prefix) > 253
                       or not DNS1123_SUBDOMAIN.fullmatch(prefix)):
        errors.append(f"key {key!r}: prefix must be a DNS-1123 subdomain")
    if not name or len(name) > 63 or not _QUALIFIED_NAME.fullmatch(name):
        errors.append(f"key {key!r}: name part must be a qualified name of at most 63 characters")
    return errors


def meta_errors(obj: Any, *, namespaced: bool) -> list[str]:
    """Everything wrong with ``obj``'s metadata (empty when valid)."""
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    if not isinstance(meta, dict):
        return ["metadata must be an object"]
    errors = [f"metadata.{key}: not set by our manifests"
              for key in sorted(set(meta) - _ALLOWED_META)]
    name = meta.get("name")
    pattern, limit = ((DNS1123_LABEL, 63) if obj.get("kind") in LABEL_NAMED
                      else (DNS1123_SUBDOMAIN, 253))
    if not isinstance(name, str) or len(name) > limit or not pattern.fullmatch(name):
        errors.append(f"metadata.name {name!r} is not a DNS-1123 "
                      f"{'label' if limit == 63 else 'subdomain'}")
    namespace = meta.get("namespace")
    if namespaced:
        if not isinstance(namespace, str) or len(namespace) > 63 \
                or not DNS1123_LABEL.fullmatch(namespace):
            errors.append(f"metadata.namespace {namespace!r} must be a DNS-1123 label")
    elif "namespace" in meta:
        errors.append("metadata.namespace set on a cluster-scoped object")
    for key, value in (meta.get("labels") or {}).items():
        errors += [f"label {e}" for e in qualified_name_errors(key)]
        if not isinstance(value, str) or len(value) > 63 or not _LABEL_VALUE.fullmatch(value):
            errors.append(f"label {key!r}: value {value!r} is not a valid label value")
    for key, value in (meta.get("annotations") or {}).items():
        errors += [f"annotation {e}" for e in qualified_name_errors(key)]
        if not isinstance(value, str):
            errors.append(f"annotation {key!r}: value must be a string")
    return errors
