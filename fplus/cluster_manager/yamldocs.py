"""Multi-document YAML in the ACS manifest format: ``---`` before each document, ``...`` between.

``render_documents([a, b]) == "---\\n<a>...\\n---\\n<b>"``: deterministic, keys in the order given.
"""

from __future__ import annotations

import functools
from typing import Any

import yaml

from fplus.templating import untrusted_yaml

_END = "...\n"
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


def render_documents(docs: list[Any]) -> str:
    """Documents joined in the ACS file format (empty list → empty string).

    Meant for the generated manifests, which repeat from cluster to cluster: each distinct
    document is dumped once.
    """
    return _END.join("---\n" + _render_remembered(_ByRepr(doc)) for doc in docs)


def load_documents(text: str | bytes) -> list[Any]:
    """All documents of a multi-document YAML text (empty documents dropped), read as
    untrusted: the repo's files can be pushed by others."""
    return untrusted_yaml.load_all(text)
