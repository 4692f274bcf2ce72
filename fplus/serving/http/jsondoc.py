"""JSON documents checked at the door: bounded nesting and valid Unicode strings.

Python's parser accepts nesting until its recursion limit, lone UTF-16 surrogate escapes
(``"\\ud800"``), ``NaN``/``Infinity`` and numbers that overflow to infinity, and UTF-16/32
bodies: none of which a UTF-8 store, encoder or JSON peer accepts. A document that would fail
later (a ``RecursionError`` while serialising, an encode error while storing, ``Infinity`` in
an answer) is refused here, with a message, before anything acts on it.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

MAX_DEPTH = 64
"""Default deepest nesting of arrays and objects a document may have."""

_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")


class JSONRejected(ValueError):
    """A document that is not UTF-8 JSON, nests too deeply, or holds an invalid string."""


def loads_checked(raw: bytes | str, max_depth: int = MAX_DEPTH) -> Any:
    """Parse ``raw``; raise :class:`JSONRejected` (with a message fit for a 400) if it is not
    UTF-8 JSON (``NaN``, ``Infinity`` and numbers beyond a double are not), nests deeper than
    ``max_depth``, or holds a lone surrogate in a string or key."""
    data = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else bytes(raw)
    try:
        text = data.decode("utf-8-sig")  # strict: UTF-16/32 and stray bytes are refused
    except UnicodeDecodeError:
        raise JSONRejected("JSON must be UTF-8") from None
    try:
        value = _DECODER.decode(text)
    except JSONRejected:
        raise
    except RecursionError:
        raise JSONRejected(f"JSON nests deeper than {max_depth} levels") from None
    except json.JSONDecodeError as exc:
        raise JSONRejected(f"not valid JSON: {exc}") from None
    except ValueError:  # an integer over Python's digit limit
        raise JSONRejected("not valid JSON: a number has too many digits") from None
    deep = data.count(b"[") + data.count(b"{") > max_depth
    odd = _SURROGATE_ESCAPE.search(data) is not None
    if deep or odd:
        _check(value, max_depth if deep else None, odd)
    return value


def _no_constant(name: str) -> Any:
    raise JSONRejected(f"{name} is not a JSON value")


def _finite(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise JSONRejected(f"the number {text[:40]} is out of range")
    return value


_DECODER = json.JSONDecoder(parse_constant=_no_constant, parse_float=_finite)
"""One decoder for every document (``json.loads`` with options builds one per call)."""


def _check(value: Any, max_depth: int | None, strings: bool) -> None:
    """Walk ``value`` (without recursion) for nesting over ``max_depth`` and, if ``strings``,
    for strings or keys holding a lone surrogate (not encodable as UTF-8)."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            if strings and _SURROGATE.search(item):
                raise JSONRejected("JSON string holds an invalid Unicode escape "
                                   "(a lone surrogate)")
        elif isinstance(item, (dict, list)):
            depth += 1
            if max_depth is not None and depth > max_depth:
                raise JSONRejected(f"JSON nests deeper than {max_depth} levels")
            children = item.values() if isinstance(item, dict) else item
            if strings and isinstance(item, dict):
                stack.extend((key, depth) for key in item)
            stack.extend((child, depth) for child in children)
