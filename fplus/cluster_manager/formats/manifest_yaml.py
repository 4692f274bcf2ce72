"""Multi-document YAML in the ACS manifest format: ``---`` before each document, ``...`` between.

``render_documents([a, b]) == "---\\n<a>...\\n---\\n<b>"``: deterministic, keys in the order given.
"""

from __future__ import annotations

import functools
import re
from typing import Any

import yaml

from fplus.templating import untrusted_yaml

_END = "...\n"
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_STAND_IN = "00000000-0000-0000-0000-000000000000"
"""Dumped in place of a document's varying uuid (see :func:`render_documents`)."""
_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)  # libyaml when the wheel has it


def render_document(doc: Any) -> str:
    """One document as block YAML, keys in insertion order, without any document marker."""
    text = yaml.dump(doc, Dumper=_DUMPER, sort_keys=False, default_flow_style=False,
                     allow_unicode=True)
    # safe_dump ends a bare top-level scalar with an explicit end marker; we place our own
    return text.removesuffix(_END)


class _ByRepr:
    """A document that hashes and compares by its ``repr`` (type-exact for JSON data)."""

    __slots__ = ("doc", "key")

    def __init__(self, doc: Any) -> None:
        self.doc, self.key = doc, repr(doc)

    def __hash__(self) -> int:
        return hash(self.key)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _ByRepr) and self.key == other.key


@functools.lru_cache(maxsize=256)
def _render_remembered(doc: _ByRepr) -> str:
    """:func:`render_document` of the documents rendered most recently: most manifests of
    an edge bundle are the same for every cluster."""
    return render_document(doc.doc)


def render_documents(docs: list[Any], varying: str | None = None) -> str:
    """Documents joined in the ACS file format (empty list → empty string).

    Meant for the generated manifests, which repeat from cluster to cluster: each distinct
    document is dumped once. ``varying``, a lower-case uuid (the cluster's), may stand in
    documents otherwise alike: such a document is dumped once with a stand-in uuid and the
    stand-in replaced in the text. That is the text a dump of it gives: a uuid is plain in
    YAML wherever it stands (no tag resolves a scalar holding one, and its characters need
    no quoting or escape), and two uuids are as long as each other, so nothing folds
    differently.
    """
    if varying is None or not _UUID.fullmatch(varying):
        return _END.join("---\n" + _render_remembered(_ByRepr(doc)) for doc in docs)
    return _END.join("---\n" + _render_varying(doc, varying) for doc in docs)


def _render_varying(doc: Any, varying: str) -> str:
    key = _ByRepr(doc)
    if varying not in key.key or _STAND_IN in key.key:
        return _render_remembered(key)
    try:
        alike = _replaced(doc, varying)
    except _Ambiguous:
        return _render_remembered(key)
    return _render_remembered(_ByRepr(alike)).replace(_STAND_IN, varying)


class _Ambiguous(Exception):
    """A string where the stand-in would not be replaced back exactly."""


def _replaced(value: Any, varying: str) -> Any:
    """``value`` with ``varying`` replaced by the stand-in in every string (keys too)."""
    if isinstance(value, str):
        alike = value.replace(varying, _STAND_IN)
        if alike.replace(_STAND_IN, varying) != value:  # the stand-in overlapping its
            raise _Ambiguous  # neighbours: a run of zeros and dashes next to the uuid
        return alike
    if isinstance(value, dict):
        return {_replaced(k, varying): _replaced(v, varying) for k, v in value.items()}
    if isinstance(value, list):
        return [_replaced(item, varying) for item in value]
    return value


def load_documents(text: str | bytes) -> list[Any]:
    """All documents of a multi-document YAML text (empty documents dropped), read as
    untrusted: the repo's files can be pushed by others."""
    return untrusted_yaml.load_all(text)
