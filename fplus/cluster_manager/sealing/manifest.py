"""The SealedSecret document kept at ``edo/secrets/<namespace>/<name>.yaml`` in a cluster repo,
one per Secret, holding every sealed key of that Secret (ACS's shape, §3.7 of the ACS notes)::

    apiVersion: bitnami.com/v1alpha1
    kind: SealedSecret
    metadata: {name: <name>, namespace: <ns>, annotations: <scope annotation, non-strict only>}
    spec:
      encryptedData: {<key>: <ciphertext>, ...}        # sorted by key, as kubeseal emits them
      template:
        metadata: {name: <name>, namespace: <ns>, annotations: <same as above>}
        type: Opaque

Differences from ACS's new-file shape: no ``template.data: null`` (kubeseal never writes it and a
plain JSON Schema reading of the CRD rejects ``null`` there), and scope annotations for
non-strict scopes (ACS only seals strict). Existing documents are kept as they are apart from
the key being changed (``data: null``, labels, other annotations, ``type`` all survive).

All functions return new objects and never modify their arguments.
"""

from __future__ import annotations

import base64
import binascii
import copy
from collections.abc import Mapping
from typing import Any

from fplus.cluster_manager.sealing.errors import InvalidCiphertext, ManifestError, ScopeConflict
from fplus.cluster_manager.sealing.names import validate_key, validate_name, validate_namespace
from fplus.cluster_manager.sealing.scope import (
    parse_scope,
    scope_annotations,
    scope_from_annotations,
    with_scope_annotations,
)

API_VERSION = "bitnami.com/v1alpha1"
KIND = "SealedSecret"
SECRETS_DIR = "edo/secrets"
SECRET_TYPE = "Opaque"  # noqa: S105 - the Secret type, not a password


def secret_path(namespace: str, name: str) -> str:
    """``edo/secrets/<namespace>/<name>.yaml`` after validating both parts."""
    return f"{SECRETS_DIR}/{validate_namespace(namespace)}/{validate_name(name)}.yaml"


def sealed_secret(namespace: str, name: str, encrypted: Mapping[str, str],
                  scope: str | None = None) -> dict[str, Any]:
    """A new SealedSecret for ``namespace``/``name`` holding ``encrypted`` (key → ciphertext,
    all sealed in ``scope``; ``None`` means strict)."""
    validate_namespace(namespace)
    validate_name(name)
    scope = parse_scope(scope)
    data = {validate_key(key): _ciphertext(key, value) for key, value in encrypted.items()}
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": _metadata(namespace, name, scope),
        "spec": {
            "encryptedData": dict(sorted(data.items())),
            "template": {"metadata": _metadata(namespace, name, scope), "type": SECRET_TYPE},
        },
    }


def _metadata(namespace: str, name: str, scope: str) -> dict[str, Any]:
    """Fresh (unshared, so YAML gets no anchors) metadata with the scope's annotations."""
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    annotations = scope_annotations(scope)
    if annotations:
        meta["annotations"] = annotations
    return meta


def merge_key(existing: Mapping[str, Any] | None, namespace: str, name: str, key: str,
              ciphertext: str, scope: str | None = None) -> dict[str, Any]:
    """``existing`` (or a new SealedSecret when ``None``) with ``encryptedData[key]`` set to
    ``ciphertext``; every other key is kept.

    The controller unseals every key of one SealedSecret with the label of its scope
    annotations, so keys sealed in different scopes cannot share a document:
    :class:`ScopeConflict` if ``existing`` holds *other* keys in another scope. When it holds
    none (empty, or only ``key`` itself), the document's scope annotations are switched.
    :class:`ManifestError` if ``existing`` is not a SealedSecret for ``namespace``/``name``.
    """
    validate_namespace(namespace)
    validate_name(name)
    validate_key(key)
    scope = parse_scope(scope)
    ciphertext = _ciphertext(key, ciphertext)
    if existing is None:
        return sealed_secret(namespace, name, {key: ciphertext}, scope)
    doc = _copy_checked(existing)
    meta = doc["metadata"]
    if meta.get("namespace") != namespace or meta.get("name") != name:
        raise ManifestError(f"the existing document is the SealedSecret "
                            f"{meta.get('namespace')!s}/{meta.get('name')!s}, not "
                            f"{namespace}/{name}")
    data = doc["spec"]["encryptedData"]
    current = scope_from_annotations(meta.get("annotations"))
    if current != scope:
        others = sorted(k for k in data if k != key)
        if others:
            raise ScopeConflict(f"{namespace}/{name} holds keys sealed {current} "
                                f"({_list(others)}); a {scope} key cannot join them: seal it "
                                f"{current} or remove those keys first")
        _rescope(doc, scope)
    data[key] = ciphertext
    doc["spec"]["encryptedData"] = dict(sorted(data.items()))
    return doc


def remove_key(existing: Mapping[str, Any] | None, key: str) -> dict[str, Any] | None:
    """``existing`` without ``encryptedData[key]``, or ``None`` when no key remains (the file
    should then be deleted). Removing an absent key is not an error."""
    validate_key(key)
    if existing is None:
        return None
    doc = _copy_checked(existing)
    data = doc["spec"]["encryptedData"]
    data.pop(key, None)
    return doc if data else None


def manifest_scope(manifest: Mapping[str, Any]) -> str:
    """The scope the controller will unseal ``manifest``'s keys with (from its own metadata)."""
    meta = manifest.get("metadata")
    return scope_from_annotations(meta.get("annotations") if isinstance(meta, Mapping) else None)


def sealed_keys(manifest: Mapping[str, Any] | None) -> list[str]:
    """The keys sealed in ``manifest``, sorted (never the values)."""
    if manifest is None:
        return []
    return sorted(_copy_checked(manifest)["spec"]["encryptedData"])


def _copy_checked(existing: Mapping[str, Any]) -> dict[str, Any]:
    """A deep copy of an existing SealedSecret after checking the parts we touch."""
    if not isinstance(existing, Mapping):
        raise ManifestError(f"the existing document is a {type(existing).__name__}, not a "
                            f"SealedSecret object")
    if existing.get("apiVersion") != API_VERSION or existing.get("kind") != KIND:
        raise ManifestError(f"the existing document is {existing.get('apiVersion')!s} "
                            f"{existing.get('kind')!s}, not {API_VERSION} {KIND}")
    doc = copy.deepcopy(dict(existing))
    if not isinstance(doc.get("metadata"), dict):
        raise ManifestError("the existing SealedSecret has no metadata")
    spec = doc.get("spec")
    if not isinstance(spec, dict):
        raise ManifestError("the existing SealedSecret has no spec")
    if spec.get("data") is not None:
        raise ManifestError("the existing SealedSecret uses the deprecated whole-Secret "
                            "spec.data format; it cannot take per-key values")
    data = spec.get("encryptedData")
    if data is None:
        data = spec["encryptedData"] = {}
    if not isinstance(data, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in data.items()):
        raise ManifestError("the existing SealedSecret's spec.encryptedData is not a map of "
                            "strings")
    return doc


def _rescope(doc: dict[str, Any], scope: str) -> None:
    """Replace the scope annotations on the document and its template (other annotations
    stay; an emptied ``annotations`` map is dropped)."""
    targets = [doc["metadata"]]
    template = doc["spec"].get("template")
    if isinstance(template, dict) and isinstance(template.get("metadata"), dict):
        targets.append(template["metadata"])
    for meta in targets:
        annotations = with_scope_annotations(meta.get("annotations"), scope)
        if annotations:
            meta["annotations"] = annotations
        else:
            meta.pop("annotations", None)


def _ciphertext(key: str, value: object) -> str:
    """``value`` if it looks like a sealed value: standard, padded base64 of at least 2 bytes."""
    try:
        ok = isinstance(value, str) and len(base64.b64decode(value, validate=True)) > 2
    except (binascii.Error, TypeError, ValueError):
        ok = False
    if not ok or not isinstance(value, str):
        raise InvalidCiphertext(f"the sealed value for key {key!r} is not standard base64 "
                                f"ciphertext")
    return value


def _list(keys: list[str], limit: int = 5) -> str:
    shown = ", ".join(keys[:limit])
    return shown + (f" and {len(keys) - limit} more" if len(keys) > limit else "")
