"""Multi-document YAML in the ACS manifest format: ``---`` before each document, ``...`` between.

``render_documents([a, b]) == "---\\n<a>...\\n---\\n<b>"``: deterministic, keys in the order given.
"""

from __future__ import annotations

from typing import Any

import yaml

from cluster_manager.repo._recent import Recent

_END = "...\n"
_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)  # libyaml when the wheel has it
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


_RECENT: Recent[str, str] = Recent(256)
"""YAML of recently rendered documents by ``repr`` (type-exact for JSON data): most
manifests of an edge bundle are the same for every cluster."""


def render_document(doc: Any) -> str:
    """One document as block YAML, keys in insertion order, without any document marker."""
    text = yaml.dump(doc, Dumper=_DUMPER, sort_keys=False, default_flow_style=False,
                     allow_unicode=True)
    # safe_dump ends a bare top-level scalar with an explicit end marker; we place our own
    return text.removesuffix(_END)


def _render_recent(doc: Any) -> str:
    """:func:`render_document`, remembered for the documents rendered most recently."""
    key = repr(doc)
    text = _RECENT.get(key)
    if text is None:
        text = render_document(doc)
        _RECENT.put(key, text)
    return text


def render_documents(docs: list[Any]) -> str:
    """Documents joined in the ACS file format (empty list → empty string).

    Meant for the generated manifests, which repeat from cluster to cluster: each distinct
    document is dumped once.
    """
    return _END.join("---\n" + _render_recent(doc) for doc in docs)


def load_documents(text: str | bytes) -> list[Any]:
    """All documents of a multi-document YAML text (empty documents dropped)."""
    return [doc for doc in yaml.load_all(text, Loader=_LOADER) if doc is not None]
