"""Kubernetes labels and label selectors (apimachinery ``validation.go`` and
``labels/selector.go``): their syntax, and whether a selector matches a set of labels.

Clusters carry labels (``{"site": "leeds", "tier": "line"}``); fleet deployments pick
clusters with a selector ``{matchLabels?, matchExpressions?}`` exactly as a Kubernetes
``LabelSelector`` does. Each ``*_errors`` function names every refused field
(``"labels.site"``, ``"selector.matchExpressions[0].operator"``) and answers ``{}`` when all
is well; :func:`selector_matches` expects a selector those checks accepted.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from . import SUBDOMAIN_MAX, is_dns1123_subdomain

NAME_MAX = 63
_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


def is_label_key(key: object) -> bool:
    """A qualified name: ``[prefix/]name``, the prefix a DNS-1123 subdomain (at most 253
    characters), the name at most 63 of ``[-A-Za-z0-9_.]``, alphanumeric at both ends."""
    if not isinstance(key, str):
        return False
    prefix, slash, name = key.rpartition("/")
    if slash and not is_dns1123_subdomain(prefix, SUBDOMAIN_MAX):
        return False
    return len(name) <= NAME_MAX and _NAME.fullmatch(name) is not None


def is_label_value(value: object) -> bool:
    """Empty, or at most 63 of ``[-A-Za-z0-9_.]``, alphanumeric at both ends."""
    return isinstance(value, str) and (
        value == "" or (len(value) <= NAME_MAX and _NAME.fullmatch(value) is not None))


def labels_errors(labels: object, field: str = "labels") -> dict[str, str]:
    """Why ``labels`` (an object of label keys to label values) is refused, by field."""
    if not isinstance(labels, dict):
        return {field: f"{field} must be an object of label keys to string values"}
    errors: dict[str, str] = {}
    for key, value in labels.items():
        if not is_label_key(key):
            errors[f"{field}.{key}"] = (
                f"{key!r} is not a label key: [prefix/]name, the name at most {NAME_MAX} "
                f"of letters, digits, '-', '_' and '.', alphanumeric at both ends")
        elif not is_label_value(value):
            errors[f"{field}.{key}"] = (
                f"{value!r} is not a label value: a string of at most {NAME_MAX} letters, "
                f"digits, '-', '_' and '.', alphanumeric at both ends, or empty")
    return errors


def selector_errors(selector: object, field: str = "selector") -> dict[str, str]:
    """Why ``selector`` (``{matchLabels?, matchExpressions?}``) is refused, by field."""
    if not isinstance(selector, dict):
        return {field: f"{field} must be an object with matchLabels and/or matchExpressions"}
    errors: dict[str, str] = {}
    unknown = set(selector) - {"matchLabels", "matchExpressions"}
    if unknown:
        errors[field] = f"unknown keys in {field}: {', '.join(sorted(map(str, unknown)))}"
    if "matchLabels" in selector:
        errors |= labels_errors(selector["matchLabels"], f"{field}.matchLabels")
    expressions = selector.get("matchExpressions", [])
    if not isinstance(expressions, list):
        errors[f"{field}.matchExpressions"] = "matchExpressions must be a list"
        return errors
    for index, expression in enumerate(expressions):
        errors |= _expression_errors(expression, f"{field}.matchExpressions[{index}]")
    return errors


def _expression_errors(expression: object, field: str) -> dict[str, str]:
    if not isinstance(expression, dict) or set(expression) - {"key", "operator", "values"}:
        return {field: "an expression is {key, operator, values?}"}
    errors: dict[str, str] = {}
    if not is_label_key(expression.get("key")):
        errors[f"{field}.key"] = f"{expression.get('key')!r} is not a label key"
    operator, values = expression.get("operator"), expression.get("values")
    if operator not in OPERATORS:
        errors[f"{field}.operator"] = f"operator must be one of {', '.join(OPERATORS)}"
    elif operator in ("In", "NotIn"):
        if not isinstance(values, list) or not values:
            errors[f"{field}.values"] = f"{operator} needs a non-empty list of values"
        elif not all(is_label_value(v) for v in values):
            errors[f"{field}.values"] = "every value must be a label value"
    elif values:
        errors[f"{field}.values"] = f"{operator} takes no values"
    return errors


def selector_matches(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """True when ``labels`` satisfy every requirement of ``selector`` (an empty selector
    matches everything, as in Kubernetes)."""
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expression in selector.get("matchExpressions") or []:
        key, operator = expression["key"], expression["operator"]
        present = key in labels
        if operator == "Exists" and not present:
            return False
        if operator == "DoesNotExist" and present:
            return False
        if operator == "In" and (not present or labels[key] not in expression["values"]):
            return False
        if operator == "NotIn" and present and labels[key] in expression["values"]:
            return False
    return True
