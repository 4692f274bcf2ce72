"""Reading the OpenAPI documents in tests: references, inlining, operations."""

from __future__ import annotations

from typing import Any

METHODS = ("get", "head", "put", "post", "patch", "delete", "options", "trace")


def deref(spec: dict[str, Any], node: Any) -> Any:
    """Follow local ``$ref``s (``#/a/b``) until a plain node."""
    while isinstance(node, dict) and "$ref" in node:
        target: Any = spec
        for part in node["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        node = target
    return node


def inline(spec: dict[str, Any], node: Any) -> Any:
    """``node`` with every local ``$ref`` replaced by its target (siblings kept; the
    documents have no cycles)."""
    if isinstance(node, list):
        return [inline(spec, n) for n in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        siblings = {k: v for k, v in node.items() if k != "$ref"}
        return {**inline(spec, deref(spec, {"$ref": node["$ref"]})), **inline(spec, siblings)}
    return {k: inline(spec, v) for k, v in node.items()}


def operations(spec: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    """``(path, METHOD) -> operation`` for every documented operation."""
    out = {}
    for path, item in spec["paths"].items():
        item = deref(spec, item)
        for method in METHODS:
            if method in item:
                out[(path, method.upper())] = item[method]
    return out
