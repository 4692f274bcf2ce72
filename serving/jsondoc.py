"""JSON documents checked at the door: bounded nesting and valid Unicode strings.

Python's parser accepts nesting until its recursion limit and lone UTF-16 surrogate escapes
(``"\\ud800"``), which no UTF-8 store, encoder or peer accepts. A document that would fail later
(a ``RecursionError`` while serialising, an encode error while storing) is refused here, with a
message, before anything acts on it.
"""

from __future__ import annotations

import json
import re
from typing import Any

MAX_DEPTH = 64
"""Default deepest nesting of arrays and objects a document may have."""

_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")


class JSONRejected(ValueError):
    """A document that is not JSON, nests too deeply, or holds an invalid string."""


def loads_checked(raw: bytes | str, max_depth: int = MAX_DEPTH) -> Any:
    """Parse ``raw``; raise :class:`JSONRejected` (with a message fit for a 400) if it is not
    JSON, nests deeper than ``max_depth``, or holds a lone surrogate in a string or key."""
    data = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else raw
    try:
        value = json.loads(data)
    except RecursionError:
        raise JSONRejected(f"JSON nests deeper than {max_depth} levels") from None
    except ValueError:
        raise JSONRejected("not valid JSON (or not UTF-8)") from None
    deep = data.count(b"[") + data.count(b"{") > max_depth
    odd = _SURROGATE_ESCAPE.search(data) is not None
    if deep or odd:
        _check(value, max_depth if deep else None, odd)
    return value


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
