"""YAML from users (console forms, values files, charts, Flux exports), parsed so that aliases
cannot multiply it.

PyYAML shares an aliased node instead of copying it, so ``yaml.safe_load`` of a few hundred
bytes of nested aliases ("billion laughs") returns a small graph whose expansion (by
``json.dumps``, a deep copy, a schema check, merge keys) is billions of nodes. Here the
parser's events are measured before anything is composed: counted at their expanded size,
aliases may add at most :data:`ALIAS_BUDGET` nodes and scalar characters to what the text
itself holds, nesting is at most :data:`MAX_DEPTH` deep, and an alias inside its own anchor
is refused. A refusal is :class:`YAMLRefused`, a ``yaml.YAMLError`` with a one-line message
saying why, so callers that catch bad YAML catch it too.
"""

from __future__ import annotations

from typing import Any

import yaml

ALIAS_BUDGET = 1_000_000
"""Nodes plus scalar characters that aliases may add to a text (all its documents together),
counted expanded."""
MAX_DEPTH = 100
"""Nesting levels of a document (a Flux install export nests 23 deep)."""
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when the wheel has it


class YAMLRefused(yaml.YAMLError):
    """YAML refused before it was built (an alias bomb, too deep, a recursive alias)."""


def load(text: str | bytes) -> Any:
    """The single document of ``text`` (None if empty); YAMLError if not YAML, or refused."""
    check(text)
    return yaml.load(text, Loader=_LOADER)  # noqa: S506  (a safe loader: check() passed)


def load_all(text: str | bytes) -> list[Any]:
    """Every document of ``text`` (empty ones dropped); YAMLError as for :func:`load`."""
    check(text)
    return [doc for doc in yaml.load_all(text, Loader=_LOADER) if doc is not None]


def check(text: str | bytes) -> None:
    """Refuse ``text`` if its aliases expand beyond :data:`ALIAS_BUDGET` (over all its
    documents), it nests deeper than :data:`MAX_DEPTH` or an alias sits inside its own
    anchor. One pass over the parser's events, before anything is composed: libyaml's
    composer recurses in C, so deep input must be stopped here."""
    sizes: dict[str | None, int] = {}  # anchor -> expanded size of its node
    frames: list[list[Any]] = [[0, None]]  # open collections: [expanded size, anchor]
    added = 0
    for event in yaml.parse(text, Loader=_LOADER):
        if isinstance(event, yaml.AliasEvent):
            if any(anchor == event.anchor for _, anchor in frames):
                raise YAMLRefused(f"YAML alias *{event.anchor} sits inside its own anchor")
            size = sizes.get(event.anchor, 1)
            added += size
            if added > ALIAS_BUDGET:
                raise YAMLRefused(f"YAML aliases expand to more than {ALIAS_BUDGET:,} nodes "
                                  "and characters (an alias bomb?); write the values out")
            frames[-1][0] += size
        elif isinstance(event, yaml.ScalarEvent):
            size = 1 + len(event.value)
            if event.anchor is not None:
                sizes[event.anchor] = size
            frames[-1][0] += size
        elif isinstance(event, yaml.CollectionStartEvent):
            if len(frames) > MAX_DEPTH:
                raise YAMLRefused(f"YAML nests deeper than {MAX_DEPTH} levels")
            frames.append([1, event.anchor])
        elif isinstance(event, yaml.CollectionEndEvent):
            size, anchor = frames.pop()
            if anchor is not None:
                sizes[anchor] = size
            frames[-1][0] += size
