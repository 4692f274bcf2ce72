"""SealedSecret files read back without parsing them again.

A seal reads the secret's file, changes one key and writes it back; the next seal of the same
secret reads exactly the text the previous one wrote. :class:`SecretDocuments` remembers the
document behind each text it rendered (and each it parsed), so a burst of seals to one secret
parses its YAML once, not once per key. Documents are shared: callers must not change them
(the :mod:`fplus.cluster_manager.sealing.manifest` functions never change their arguments).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from .. import sealing
from ..yamldocs import load_documents, render_document

REMEMBERED = 2048
"""Texts remembered (least recently used dropped): about one per secret being sealed."""


class SecretDocuments:
    """Parse and render secret files, remembering text ↔ document pairs (thread-safe)."""

    def __init__(self, size: int = REMEMBERED) -> None:
        self.size = size
        self._lock = threading.Lock()
        self._docs: OrderedDict[bytes, dict[str, Any] | None] = OrderedDict()

    def parse(self, content: bytes | None) -> dict[str, Any] | None:
        """The first YAML document of a secret file (None if absent or empty);
        :class:`~cluster_manager.sealing.ManifestError` if it is not YAML."""
        if not content:
            return None
        with self._lock:
            if content in self._docs:
                self._docs.move_to_end(content)
                return self._docs[content]
        doc = document(content)
        self._remember(bytes(content), doc)
        return doc

    def render(self, doc: dict[str, Any]) -> str:
        """``doc`` as the file's text, remembered for the next :meth:`parse` of it."""
        text = render_document(doc)
        self._remember(text.encode(), doc)
        return text

    def _remember(self, content: bytes, doc: dict[str, Any] | None) -> None:
        with self._lock:
            self._docs[content] = doc
            self._docs.move_to_end(content)
            while len(self._docs) > self.size:
                self._docs.popitem(last=False)


def document(content: bytes | None) -> dict[str, Any] | None:
    """The first YAML document of a secret file (None if absent or empty), parsed now."""
    if not content:
        return None
    try:
        docs = load_documents(content)
    except Exception as exc:  # unparsable YAML in the repo
        raise sealing.ManifestError(f"unparsable YAML: {exc}") from exc
    return docs[0] if docs else None
