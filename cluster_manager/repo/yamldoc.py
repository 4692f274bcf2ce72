"""Multi-document YAML in the ACS manifest format: ``---`` before each document, ``...`` between.

``render_documents([a, b]) == "---\\n<a>...\\n---\\n<b>"``: deterministic, keys in the order given.
"""

from __future__ import annotations

from typing import Any

import yaml

_END = "...\n"
_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)  # libyaml when the wheel has it
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def render_document(doc: Any) -> str:
    """One document as block YAML, keys in insertion order, without any document marker."""
    text = yaml.dump(doc, Dumper=_DUMPER, sort_keys=False, default_flow_style=False,
                     allow_unicode=True)
    # safe_dump ends a bare top-level scalar with an explicit end marker; we place our own
    return text.removesuffix(_END)


def render_documents(docs: list[Any]) -> str:
    """Documents joined in the ACS file format (empty list → empty string)."""
    return _END.join("---\n" + render_document(doc) for doc in docs)


def load_documents(text: str | bytes) -> list[Any]:
    """All documents of a multi-document YAML text (empty documents dropped)."""
    return [doc for doc in yaml.load_all(text, Loader=_LOADER) if doc is not None]
