"""JSON as a parser gives it, typed for the code that narrows it.

A document read off the wire or out of the Config Store is ``object`` until it is checked;
these name its shapes and narrow it without ``Any``, so a reader that forgets to check a
field's type fails mypy instead of a request. Known entries get TypedDicts or dataclasses of
their own, parsed once where they enter the domain; this is for the edge where they come in.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeAlias, TypeGuard

JsonScalar: TypeAlias = "bool | int | float | str | None"
JsonValue: TypeAlias = "JsonScalar | list[JsonValue] | dict[str, JsonValue]"
JsonObject: TypeAlias = "dict[str, JsonValue]"
"""A JSON object whose values are JSON (what ``json.loads`` gives for ``{...}``)."""
Doc: TypeAlias = "Mapping[str, object]"
"""A JSON object read but not yet checked: index it, then narrow what you get."""


def is_object(value: object) -> TypeGuard[dict[str, object]]:
    """Whether ``value`` is a JSON object (a dict; JSON's keys are always strings)."""
    return isinstance(value, dict)


def as_object(value: object) -> dict[str, object]:
    """``value`` if it is a JSON object, else an empty one (a missing or malformed part)."""
    return value if isinstance(value, dict) else {}


def json_object(value: JsonValue) -> JsonObject:
    """``value`` if it is a JSON object, else an empty one; unlike :func:`as_object`, its
    members stay typed as JSON (for a value parsed as JSON, not one of unknown type)."""
    return value if isinstance(value, dict) else {}


def as_list(value: object) -> list[object]:
    """``value`` if it is a JSON array, else an empty one."""
    return value if isinstance(value, list) else []


def text(doc: Doc, key: str) -> str | None:
    """``doc[key]`` if it is a string, else None."""
    value = doc.get(key)
    return value if isinstance(value, str) else None


def number(doc: Doc, key: str) -> float | None:
    """``doc[key]`` if it is a number (not a bool), else None."""
    value = doc.get(key)
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) \
        else None


def strings(value: object) -> list[str]:
    """The strings of a JSON array (anything else in it, or a non-array, left out)."""
    return [item for item in value if isinstance(item, str)] if isinstance(value, list) else []


def string_map(value: object) -> dict[str, str]:
    """The string-valued members of a JSON object (labels, annotations)."""
    if not isinstance(value, dict):
        return {}
    return {k: v for k, v in value.items() if isinstance(k, str) and isinstance(v, str)}
