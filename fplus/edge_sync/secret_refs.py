"""Pods → the ``secretRefs`` report of the Edge cluster status (pure functions).

The report names every Secret a Pod on the edge references, as ``<namespace>/<name>`` (the
Pod's namespace: a Pod can only use Secrets of its own namespace), so the Cluster Manager
can offer the sealed secrets nothing references for clean-up. A Pod references a Secret
through

- ``spec.volumes[].secret.secretName``,
- ``spec.volumes[].projected.sources[].secret.name``,
- ``env[].valueFrom.secretKeyRef.name`` and ``envFrom[].secretRef.name`` of its
  ``containers``, ``initContainers`` and ``ephemeralContainers``,
- ``spec.imagePullSecrets[].name``;

references marked ``optional`` count too. Only Pods are read: a workload with no Pod right
now (a CronJob between runs, a Deployment scaled to zero) references nothing here, and
neither do Secrets used by other objects (Ingress TLS, Flux ``secretRef``s).

The report is bounded so that the Config Store always takes it: at most :data:`MAX_REFS`
entries and :data:`MAX_BYTES` of JSON (the first ones in sorted order, ``truncated`` then
``true``), each a valid namespace (≤ 63 characters) and Secret name (≤ 253), as the status
schema's ``pattern`` requires; a reference that cannot name a Secret is left out.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator

from fplus.jsontypes import Doc, as_list, is_object

from .report import SecretRefs

MAX_REFS = 5000
"""Entries in one report (the schema's ``maxItems``)."""
MAX_REF = 63 + 1 + 253
"""Characters of one entry: a namespace, ``/``, a Secret name (the schema's ``maxLength``)."""
MAX_BYTES = 512 * 1024
"""JSON bytes of the ``secrets`` list: well inside the Config Store's default 1 MiB body
limit together with the other keys of a write (a 413 would hold back every key)."""
MAX_ERROR = 300
"""Characters of ``error`` kept (the schema's ``maxLength``)."""

_LABEL = r"[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?"
_SUBDOMAIN = r"[a-z0-9](?:[-.a-z0-9]{0,251}[a-z0-9])?"
REF_PATTERN = re.compile(f"{_LABEL}/{_SUBDOMAIN}")
"""A namespace (DNS-1123 label) and a Secret name (DNS-1123 subdomain characters); the
status schema holds the same pattern, anchored."""

CONTAINER_LISTS = ("containers", "initContainers", "ephemeralContainers")


def _dicts(value: object) -> Iterator[Doc]:
    """The objects in ``value`` if it is a list (anything else: none)."""
    yield from (item for item in as_list(value) if is_object(item))


def _get(value: object, *path: str) -> object:
    """``value[path[0]][path[1]]…``, or None where a step is not an object."""
    for key in path:
        if not is_object(value):
            return None
        value = value.get(key)
    return value


def secret_names(spec: Doc) -> Iterator[object]:
    """Every Secret name a Pod spec references, as found (possibly not a string)."""
    for volume in _dicts(spec.get("volumes")):
        yield _get(volume, "secret", "secretName")
        for source in _dicts(_get(volume, "projected", "sources")):
            yield _get(source, "secret", "name")
    for field in CONTAINER_LISTS:
        for container in _dicts(spec.get(field)):
            for env in _dicts(container.get("env")):
                yield _get(env, "valueFrom", "secretKeyRef", "name")
            for source in _dicts(container.get("envFrom")):
                yield _get(source, "secretRef", "name")
    for ref in _dicts(spec.get("imagePullSecrets")):
        yield ref.get("name")


def pod_refs(pod: object) -> set[str]:
    """The ``<namespace>/<name>`` of every Secret a Pod (its JSON form) references; names
    that cannot be a Secret's are left out, and so is everything of a malformed Pod."""
    namespace = _get(pod, "metadata", "namespace")
    spec = _get(pod, "spec")
    if not isinstance(namespace, str) or not is_object(spec):
        return set()
    found = (f"{namespace}/{name}" for name in secret_names(spec) if isinstance(name, str))
    return {ref for ref in found if REF_PATTERN.fullmatch(ref)}


def collect(pods: Iterable[object]) -> set[str]:
    """The references of every Pod."""
    found: set[str] = set()
    for pod in pods:
        found |= pod_refs(pod)
    return found


def _cut(value: str, limit: int) -> str:
    return value if len(value) <= limit else value[: limit - 1] + "…"


def report(refs: Iterable[str] | None, *, at: str, error: str | None = None,
           limit: int = MAX_REFS, max_bytes: int = MAX_BYTES) -> SecretRefs:
    """The ``secretRefs`` report as of ``at``.

    With ``error`` (the Pods could not be listed) ``secrets`` is None: unknown, not "none
    referenced". Otherwise the references deduplicated and sorted, the first ``limit`` of
    them that fit in ``max_bytes`` of JSON, and ``truncated`` says whether some were left
    out. Every key is always present: the merge patch that carries the report sends None
    for ``secrets`` and ``error``, which removes the earlier value.
    """
    if error is not None:
        return {"secrets": None, "truncated": False, "at": at, "error": _cut(error, MAX_ERROR)}
    ordered = sorted(set(refs or ()))
    kept: list[str] = []
    size = 2  # the brackets
    for ref in ordered[:limit]:
        size += len(json.dumps(ref)) + 2  # a separator ", " (one too many: on the safe side)
        if size > max_bytes:
            break
        kept.append(ref)
    return {"secrets": kept, "truncated": len(kept) < len(ordered), "at": at, "error": None}
