"""Template rendering with npm ``json-templates`` semantics (reference §3.5).

Every string, and every object key, is scanned for ``{{ key }}`` / ``{{ key:default }}``
where ``key`` is a dotted path into the context. A string that is exactly one placeholder
is replaced by the raw context value (any JSON type; an undefined value drops the key or
list item, as JSON serialisation of ``undefined`` does). Otherwise every placeholder is
interpolated as text (``null``/undefined → empty string).
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from typing import Any

_PLACEHOLDER = re.compile(r"{{([\w\s:.,@/()?=*$+-]+)}}")
_MISSING = object()
MISSING = _MISSING
"""A :data:`Resolver`'s answer for a placeholder with no value (as an undefined one)."""
KEEP = object()
"""A :data:`Resolver`'s answer for a placeholder left as written."""
Resolver = Callable[[str], Any]
"""Answers one placeholder (the text between its braces) for :func:`render_with`."""


class TemplateError(ValueError):
    """A template that cannot be rendered (e.g. a key that becomes a non-string)."""


def _lookup(context: Any, path: str) -> Any:
    value = context
    for part in path.split("."):
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return _MISSING
    return value


def _resolve(spec: str, context: Any) -> Any:
    key, sep, default = spec.partition(":")
    value = _lookup(context, key.strip())
    if value is _MISSING and sep:
        return default.strip()
    return value


def _text(value: Any) -> str:
    if value is _MISSING or value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


def render_string(template: str, context: Any) -> Any:
    """Render one string: a lone placeholder yields the raw value (possibly missing)."""
    return _render_string(template, lambda spec: _resolve(spec, context))


def _render_string(template: str, resolve: Resolver) -> Any:
    if "{{" not in template:  # most strings of a template: nothing to scan for
        return template
    whole = _PLACEHOLDER.fullmatch(template)
    if whole:
        value = resolve(whole[1])
        if value is KEEP:
            return template
        return value if value is _MISSING else copy.deepcopy(value)  # output owns its values
    return _PLACEHOLDER.sub(lambda m: m[0] if (v := resolve(m[1])) is KEEP else _text(v),
                            template)


def render(template: Any, context: Any) -> Any:
    """Render a JSON value: strings, list items, object keys and values, recursively."""
    return render_with(template, lambda spec: _resolve(spec, context))


def render_with(template: Any, resolve: Resolver) -> Any:
    """:func:`render` with each placeholder answered by ``resolve`` (given the text between
    the braces; it answers a value, :data:`MISSING`, or :data:`KEEP`: left as written)."""
    rendered = _render(template, resolve)
    return None if rendered is _MISSING else rendered


def _render(node: Any, context: Resolver) -> Any:
    if isinstance(node, str):
        return _render_string(node, context)
    if isinstance(node, list):
        items = (_render(item, context) for item in node)
        return [item for item in items if item is not _MISSING]
    if isinstance(node, dict):
        out: dict[str, Any] = {}
        for key, value in node.items():
            new_key = _render_string(key, context)
            if new_key is _MISSING:
                continue
            if not isinstance(new_key, str):
                new_key = _text(new_key)
            new_value = _render(value, context)
            if new_value is not _MISSING:
                out[new_key] = new_value
        return out
    return node


def placeholders(template: Any) -> frozenset[str]:
    """Every placeholder of ``template`` (in its strings and object keys, as written between
    the braces): all that rendering it reads of a context (:func:`reads`)."""
    found: set[str] = set()

    def scan(node: Any) -> None:
        if isinstance(node, str):
            if "{{" in node:
                found.update(m[1] for m in _PLACEHOLDER.finditer(node))
        elif isinstance(node, list):
            for item in node:
                scan(item)
        elif isinstance(node, dict):
            for key, value in node.items():
                scan(key)
                scan(value)

    scan(template)
    return frozenset(found)


def reads(specs: Any, context: Any) -> str:
    """What the placeholders ``specs`` (an ordered collection) read of ``context``, as one
    text: a template holding only those placeholders renders alike in two contexts giving the
    same text."""
    return repr([... if (v := _resolve(s, context)) is _MISSING else v for s in specs])
