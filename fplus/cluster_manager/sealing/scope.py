"""Sealing scopes: the OAEP label each one binds a value to, and the annotations that tell the
controller which label to use when it unseals (sealed-secrets' ``EncryptionLabel``,
``SecretScope`` and ``UpdateScopeAnnotations``).

================== ========================= ====================================================
scope              OAEP label                annotation (on SealedSecret and template metadata)
================== ========================= ====================================================
``strict``         ``b"<namespace>/<name>"`` none
``namespace-wide`` ``b"<namespace>"``        ``sealedsecrets.bitnami.com/namespace-wide: "true"``
``cluster-wide``   ``b""``                   ``sealedsecrets.bitnami.com/cluster-wide: "true"``
================== ========================= ====================================================

The controller computes the label from the SealedSecret's *own* metadata (namespace, name,
annotations), so a strict value only unseals in an object with exactly that namespace and name.
"""

from __future__ import annotations

from collections.abc import Mapping

from fplus.cluster_manager.sealing.errors import ScopeError
from fplus.cluster_manager.sealing.names import validate_name, validate_namespace

STRICT = "strict"
NAMESPACE_WIDE = "namespace-wide"
CLUSTER_WIDE = "cluster-wide"
SCOPES = (STRICT, NAMESPACE_WIDE, CLUSTER_WIDE)

NAMESPACE_WIDE_ANNOTATION = "sealedsecrets.bitnami.com/namespace-wide"
CLUSTER_WIDE_ANNOTATION = "sealedsecrets.bitnami.com/cluster-wide"
_ANNOTATION = {NAMESPACE_WIDE: NAMESPACE_WIDE_ANNOTATION, CLUSTER_WIDE: CLUSTER_WIDE_ANNOTATION}


def parse_scope(scope: str | None) -> str:
    """The canonical scope name; ``None`` and ``""`` mean ``strict`` (kubeseal's default).

    Case-sensitive, like kubeseal's ``--scope`` flag; anything else is a :class:`ScopeError`.
    """
    if scope is None or scope == "":
        return STRICT
    if scope not in SCOPES:
        raise ScopeError(f"scope must be one of {', '.join(SCOPES)}, not {str(scope)[:40]!r}")
    return scope


def encryption_label(scope: str | None, namespace: str, name: str) -> bytes:
    """The OAEP label for ``scope``; validates only the parts the label uses.

    ``strict`` → ``b"<namespace>/<name>"`` (with the slash, as the Go code and its tests have it;
    the developer docs' "namespace || name" is wrong), ``namespace-wide`` → ``b"<namespace>"``,
    ``cluster-wide`` → ``b""``.
    """
    scope = parse_scope(scope)
    if scope == STRICT:
        return f"{validate_namespace(namespace)}/{validate_name(name)}".encode("ascii")
    if scope == NAMESPACE_WIDE:
        return validate_namespace(namespace).encode("ascii")
    return b""


def scope_annotations(scope: str | None) -> dict[str, str]:
    """The annotations kubeseal puts on a SealedSecret (and its template) sealed in ``scope``."""
    scope = parse_scope(scope)
    return {_ANNOTATION[scope]: "true"} if scope in _ANNOTATION else {}


def scope_from_annotations(annotations: Mapping[str, object] | None) -> str:
    """The scope the controller will unseal with (``SecretScope``).

    ``cluster-wide: "true"`` wins over ``namespace-wide: "true"``; any other value (``"True"``,
    ``true`` the boolean) or no annotation means ``strict``.
    """
    annotations = annotations if isinstance(annotations, Mapping) else {}
    if annotations.get(CLUSTER_WIDE_ANNOTATION) == "true":
        return CLUSTER_WIDE
    if annotations.get(NAMESPACE_WIDE_ANNOTATION) == "true":
        return NAMESPACE_WIDE
    return STRICT


def with_scope_annotations(annotations: Mapping[str, str] | None,
                           scope: str | None) -> dict[str, str]:
    """A copy of ``annotations`` with both scope annotations removed and ``scope``'s one added
    (``UpdateScopeAnnotations``); other annotations are kept in order."""
    kept = {k: v for k, v in (annotations or {}).items()
            if k not in (NAMESPACE_WIDE_ANNOTATION, CLUSTER_WIDE_ANNOTATION)}
    return kept | scope_annotations(scope)
