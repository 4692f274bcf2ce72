"""Validate custom resources against the shared CRD schemas (``tests/shared_files.py``).

A CRD's ``openAPIV3Schema`` is a structural OpenAPI 3.0 schema; this turns it into a JSON Schema
(draft 2020-12) that validates the way the API server would, as far as plain JSON Schema can:

* ``nullable: true`` → ``type: [T, "null"]`` (and ``null`` added to an ``enum``);
* ``x-kubernetes-int-or-string: true`` → ``anyOf: [integer, string]`` (its ``type`` dropped);
* unknown fields are errors (the API server's strict field validation): every object schema
  without ``additionalProperties`` gets ``additionalProperties: false`` unless it has
  ``x-kubernetes-preserve-unknown-fields`` or ``x-kubernetes-embedded-resource``; the root
  ``metadata`` is left open here and checked by :mod:`tests.manifests.meta`;
* ``x-kubernetes-validations`` (CEL) are checked by the hand-written equivalents in
  :data:`CEL_RULES`; a rule without one is reported as an error, never skipped silently;
* ``x-kubernetes-list-type: set|map`` → items unique (by their ``x-kubernetes-list-map-keys``);
* formats ``int32``, ``int64`` and ``byte`` are checked besides the standard ones;
* other ``x-kubernetes-*`` keys (and ``default``) do not constrain input and are dropped.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from jsonschema import Draft202012Validator, FormatChecker, ValidationError, validators

from tests.shared_files import CRDS

SHARED_CRDS = CRDS

_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions")
_SCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems")
_SCHEMA_ONE = ("items", "additionalProperties", "not", "contains", "if", "then", "else")
_KEPT_EXTENSIONS = ("x-kubernetes-validations", "x-kubernetes-list-type",
                    "x-kubernetes-list-map-keys")
_DROPPED = ("default", "description", "example", "nullable")


def norm_rule(rule: str) -> str:
    return " ".join(rule.split())


def _has(obj: Any, key: str) -> bool:
    return isinstance(obj, dict) and key in obj


# The CEL rules of the Flux / Sealed Secrets CRDs, as Python predicates over ``self``.
CEL_RULES: dict[str, Callable[[Any], bool]] = {norm_rule(rule): fn for rule, fn in {
    "(has(self.chart) && !has(self.chartRef)) || (!has(self.chart) && has(self.chartRef))":
        lambda s: _has(s, "chart") != _has(s, "chartRef"),
    "!has(self.serviceAccountName) || (has(self.provider) && (self.provider == 'azure' "
    "|| self.provider == 'aws'))":
        lambda s: not _has(s, "serviceAccountName") or s.get("provider") in ("azure", "aws"),
    "has(self.configMapRef) || has(self.secretRef)":
        lambda s: _has(s, "configMapRef") or _has(s, "secretRef"),
    "!has(self.configMapRef) || !has(self.secretRef)":
        lambda s: not (_has(s, "configMapRef") and _has(s, "secretRef")),
    "!has(self.retryInterval) || self.name != 'RemediateOnFailure'":
        lambda s: not _has(s, "retryInterval") or s.get("name") != "RemediateOnFailure",
    "!has(self.retryInterval) || self.name == 'RetryOnFailure'":
        lambda s: not _has(s, "retryInterval") or s.get("name") == "RetryOnFailure",
    # CloudNativePG's Cluster (deploy/): the rules an object without synchronous replication
    # settings reaches.
    "!(has(self.imageCatalogRef) && has(self.imageName))":
        lambda s: not (_has(s, "imageCatalogRef") and _has(s, "imageName")),
    "self.kind == 'ImageCatalog' || self.kind == 'ClusterImageCatalog'":
        lambda s: s.get("kind") in ("ImageCatalog", "ClusterImageCatalog"),
    "self.apiGroup == 'postgresql.cnpg.io'":
        lambda s: s.get("apiGroup") == "postgresql.cnpg.io",
    "!has(self.builtinLocale) || self.localeProvider == 'builtin'":
        lambda s: not _has(s, "builtinLocale") or s.get("localeProvider") == "builtin",
    "!has(self.icuLocale) || self.localeProvider == 'icu'":
        lambda s: not _has(s, "icuLocale") or s.get("localeProvider") == "icu",
    "!has(self.icuRules) || self.localeProvider == 'icu'":
        lambda s: not _has(s, "icuRules") or s.get("localeProvider") == "icu",
}.items()}


def to_json_schema(node: Any, *, _root: bool = True) -> Any:
    """The JSON Schema equivalent of one (sub)schema of a CRD, as described in the module doc."""
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _SCHEMA_MAPS:
            out[key] = {name: to_json_schema(sub, _root=False) for name, sub in value.items()}
        elif key in _SCHEMA_LISTS:
            out[key] = [to_json_schema(sub, _root=False) for sub in value]
        elif key in _SCHEMA_ONE:
            out[key] = to_json_schema(value, _root=False)
        elif key in _DROPPED or (key.startswith("x-kubernetes-") and key not in _KEPT_EXTENSIONS):
            continue
        else:
            out[key] = value
    if node.get("x-kubernetes-int-or-string"):
        out.pop("type", None)
        out.setdefault("anyOf", [{"type": "integer"}, {"type": "string"}])
    if node.get("nullable"):
        if "type" in out:
            out["type"] = [out["type"], "null"]
        if "enum" in out and None not in out["enum"]:
            out["enum"] = [*out["enum"], None]
    open_object = (node.get("x-kubernetes-preserve-unknown-fields")
                   or node.get("x-kubernetes-embedded-resource"))
    is_object = node.get("type") == "object" or "properties" in node
    if is_object and "additionalProperties" not in node and not open_object:
        out["additionalProperties"] = False
    if _root and "metadata" in out.get("properties", {}):
        out["properties"]["metadata"].pop("additionalProperties", None)
    return out


def _cel(validator: Any, rules: list[dict[str, Any]], instance: Any,
         schema: dict[str, Any]) -> Iterator[ValidationError]:
    for rule in rules:
        check = CEL_RULES.get(norm_rule(rule["rule"]))
        if check is None:
            yield ValidationError(f"CEL rule not implemented by the test validator: {rule['rule']}")
        elif not check(instance):
            yield ValidationError(rule.get("message") or f"failed CEL rule {rule['rule']}")


def _list_type(validator: Any, list_type: str, instance: Any,
               schema: dict[str, Any]) -> Iterator[ValidationError]:
    if not isinstance(instance, list) or list_type not in ("set", "map"):
        return
    keys = schema.get("x-kubernetes-list-map-keys", [])
    seen = set()
    for item in instance:
        if list_type == "map" and isinstance(item, dict):
            ident = json.dumps([item.get(k) for k in keys])
        else:
            ident = json.dumps(item, sort_keys=True)
        if ident in seen:
            yield ValidationError(f"duplicate item in x-kubernetes-list-type {list_type}: {ident}")
        seen.add(ident)


FORMATS = FormatChecker()


@FORMATS.checks("int32")
def _int32(value: Any) -> bool:
    return not isinstance(value, int) or -(2**31) <= value < 2**31


@FORMATS.checks("int64")
def _int64(value: Any) -> bool:
    return not isinstance(value, int) or -(2**63) <= value < 2**63


@FORMATS.checks("byte")
def _byte(value: Any) -> bool:
    if not isinstance(value, str):
        return True
    try:
        base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


CRDValidator = validators.extend(Draft202012Validator, {
    "x-kubernetes-validations": _cel,
    "x-kubernetes-list-type": _list_type,
})


@dataclass(frozen=True)
class CustomResource:
    """One served version of one CRD."""

    api_version: str
    kind: str
    plural: str
    namespaced: bool
    schema: dict[str, Any]

    def errors(self, obj: Any) -> list[str]:
        """Readable schema errors of ``obj`` (empty when valid)."""
        validator = CRDValidator(self.schema, format_checker=FORMATS)
        return sorted(f"{'.'.join(str(p) for p in err.absolute_path) or '(root)'}: {err.message}"
                      for err in validator.iter_errors(obj))


def cel_rules_in(node: Any) -> Iterator[str]:
    """Every CEL rule text in a CRD (sub)schema."""
    if isinstance(node, dict):
        for rule in node.get("x-kubernetes-validations", []):
            yield rule["rule"]
        for value in node.values():
            yield from cel_rules_in(value)
    elif isinstance(node, list):
        for value in node:
            yield from cel_rules_in(value)


def load_crds(directory: Path = SHARED_CRDS) -> dict[tuple[str, str], CustomResource]:
    """Every served version of every CRD file in ``directory``, keyed (apiVersion, kind)."""
    found: dict[tuple[str, str], CustomResource] = {}
    for path in sorted(directory.glob("*.yaml")):
        for crd in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            if not crd or crd.get("kind") != "CustomResourceDefinition":
                continue
            spec = crd["spec"]
            for version in spec["versions"]:
                if not version.get("served", False):
                    continue
                api_version = f"{spec['group']}/{version['name']}"
                schema = to_json_schema(version["schema"]["openAPIV3Schema"])
                schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
                CRDValidator.check_schema(schema)
                found[api_version, spec["names"]["kind"]] = CustomResource(
                    api_version, spec["names"]["kind"], spec["names"]["plural"],
                    spec["scope"] == "Namespaced", schema)
    return found
