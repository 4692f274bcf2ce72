"""Kubernetes labels and label selectors (apimachinery ``validation.go`` and
``labels/selector.go``): their syntax, and whether a selector matches a set of labels.

Clusters carry labels (``{"site": "leeds", "tier": "line"}``); fleet deployments pick
clusters with a selector ``{matchLabels?, matchExpressions?}`` exactly as a Kubernetes
``LabelSelector`` does, and the cluster list takes one in kubectl's string form
(``site=leeds,tier!=x,env in (a,b),plc,!legacy``; :func:`parse_selector`). Each
``*_errors`` function names every refused field (``"labels.site"``,
``"selector.matchExpressions[0].operator"``) and answers ``{}`` when all is well;
:func:`selector_matches` expects a selector those checks accepted.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from . import SUBDOMAIN_MAX, is_dns1123_subdomain

NAME_MAX = 63
_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")
_KEY = r"[^\s=!<>(),]+"
_EXISTS = re.compile(rf"(?P<not>!?)\s*(?P<key>{_KEY})")
_EQUALS = re.compile(rf"(?P<key>{_KEY})\s*(?P<op>==|=|!=)\s*(?P<value>[^\s=!<>(),]*)")
_SET = re.compile(rf"(?P<key>{_KEY})\s+(?P<op>in|notin)\s*\((?P<values>[^()]*)\)")


class SelectorSyntaxError(ValueError):
    """A selector string that is not Kubernetes' selector syntax; the message says where."""


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


def _requirements(text: str) -> list[str]:
    """``text`` cut at the commas outside parentheses, each part stripped."""
    parts, depth, start = [], 0, 0
    for index, char in enumerate(text):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.append(text[start:index].strip())
            start = index + 1
    parts.append(text[start:].strip())
    return parts


def _requirement(part: str) -> dict[str, Any]:
    """One requirement of a selector string as a ``matchExpressions`` item."""
    if match := _EQUALS.fullmatch(part):
        operator = "In" if match["op"] in ("=", "==") else "NotIn"
        expression = {"key": match["key"], "operator": operator, "values": [match["value"]]}
    elif match := _SET.fullmatch(part):
        values = [v.strip() for v in match["values"].split(",")]
        if values == [""]:
            raise SelectorSyntaxError(f"{part!r}: {match['op']} needs at least one value")
        expression = {"key": match["key"], "operator": "In" if match["op"] == "in" else "NotIn",
                      "values": values}
    elif match := _EXISTS.fullmatch(part):
        expression = {"key": match["key"],
                      "operator": "DoesNotExist" if match["not"] else "Exists"}
    else:
        raise SelectorSyntaxError(
            f"{part!r} is not a requirement: key=value, key==value, key!=value, "
            f"key in (v1,v2), key notin (v1,v2), key or !key")
    if not is_label_key(expression["key"]):
        raise SelectorSyntaxError(f"{part!r}: {expression['key']!r} is not a label key")
    for value in expression.get("values", []):
        if not is_label_value(value):
            raise SelectorSyntaxError(f"{part!r}: {value!r} is not a label value")
    return expression


def parse_selector(text: str) -> dict[str, Any]:
    """A selector string in Kubernetes' form (``site=leeds,tier!=x,env in (a,b),plc,!legacy``)
    as ``{matchLabels?, matchExpressions?}``: equalities go to ``matchLabels`` (a second one
    on the same key becomes an ``In`` expression), the rest to ``matchExpressions``. An
    empty string selects everything. :class:`SelectorSyntaxError` names the bad part."""
    if not text.strip():
        return {}
    match_labels: dict[str, str] = {}
    expressions: list[dict[str, Any]] = []
    for part in _requirements(text):
        if not part:
            raise SelectorSyntaxError(f"{text!r} has an empty requirement (a stray comma)")
        expression = _requirement(part)
        key, values = expression["key"], expression.get("values", [])
        if (_EQUALS.fullmatch(part) and expression["operator"] == "In"
                and key not in match_labels):
            match_labels[key] = values[0]
        else:
            expressions.append(expression)
    selector: dict[str, Any] = {}
    if match_labels:
        selector["matchLabels"] = match_labels
    if expressions:
        selector["matchExpressions"] = expressions
    return selector
