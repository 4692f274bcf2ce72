"""v1 search over an app's entries (reference §1.6).

Query items: ``path=value`` (value a JSON scalar or ``undefined``: the path must be
absent) and ``@name=path`` (select ``path`` into result key ``name``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Final

from fplus.jsontypes import JsonScalar, JsonValue

from ..._storage import SearchCondition
from ..common.errors import BadRequest

_PATH = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")


class _Missing:
    """The value of a path a document does not have (``undefined`` in a query)."""


_MISSING: Final = _Missing()


def _scalar(text: str) -> JsonScalar | _Missing:
    if text == "undefined":
        return _MISSING
    try:
        value: JsonValue = json.loads(text)
    except (ValueError, RecursionError):
        raise BadRequest(f"search value is not a JSON scalar: {text[:100]!r}") from None
    if isinstance(value, dict | list):
        raise BadRequest(f"search value is not a JSON scalar: {text[:100]!r}")
    if isinstance(value, str) and not _encodable(value):
        raise BadRequest("search value holds an invalid Unicode escape (a lone surrogate)")
    return value


def _encodable(text: str) -> bool:
    """True unless ``text`` holds a lone surrogate (no UTF-8 store or peer accepts one)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _lookup(doc: JsonValue, path: str) -> JsonValue | _Missing:
    for part in path.split("."):
        if not isinstance(doc, dict) or part not in doc:
            return _MISSING
        doc = doc[part]
    return doc


def _same(a: JsonValue, b: JsonScalar) -> bool:
    return type(a) is type(b) and a == b if isinstance(a, bool) or isinstance(b, bool) else a == b


class Query:
    """A parsed search: conditions and selections."""

    def __init__(self, items: Iterable[tuple[str, str]]) -> None:
        self.where: list[tuple[str, JsonScalar | _Missing]] = []
        self.select: dict[str, str] = {}
        for key, value in items:
            if key.startswith("@"):
                name = key[1:]
                if not name or name == "uuid" or not _PATH.match(value):
                    raise BadRequest(f"bad selection {key}={value}")
                self.select[name] = value
            elif _PATH.match(key):
                self.where.append((key, _scalar(value)))
            else:
                raise BadRequest(f"bad search term {key!r}")

    def matches(self, doc: JsonValue) -> bool:
        """True if ``doc`` satisfies every condition."""
        for path, want in self.where:
            got = _lookup(doc, path)
            if isinstance(want, _Missing):
                if not isinstance(got, _Missing):
                    return False
            elif isinstance(got, _Missing) or not _same(got, want):
                return False
        return True

    def sql_conditions(self) -> list[SearchCondition]:
        """The conditions in the storage's terms (see ``Reader.search_entries``)."""
        out: list[SearchCondition] = []
        for path, want in self.where:
            json_path = "$." + path
            if isinstance(want, _Missing):
                out.append((json_path, "missing", None))
            elif want is None:
                out.append((json_path, "null", None))
            elif isinstance(want, bool):
                out.append((json_path, "true" if want else "false", None))
            elif isinstance(want, int | float):
                out.append((json_path, "number", want))
            else:
                out.append((json_path, "text", want))
        return out

    def run(self, entries: Iterable[tuple[str, JsonValue]]
            ) -> list[str] | dict[str, dict[str, JsonValue]]:
        """Matching uuids, or ``{uuid: {name: value}}`` when selecting (nulls dropped)."""
        hits = [(obj, doc) for obj, doc in entries if self.matches(doc)]
        if not self.select:
            return [obj for obj, _ in hits]
        out: dict[str, dict[str, JsonValue]] = {}
        for obj, doc in hits:
            picked = {name: _lookup(doc, path) for name, path in self.select.items()}
            out[obj] = {k: v for k, v in picked.items()
                        if not isinstance(v, _Missing) and v is not None}
        return out
