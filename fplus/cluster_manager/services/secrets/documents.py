"""SealedSecret files read back without parsing them again.

A seal reads the secret's file, changes one key and writes it back; the next seal of the same
secret reads exactly the text the previous one wrote. :class:`SecretDocuments` remembers the
document behind each text it rendered (and each it parsed), so a burst of seals to one secret
parses its YAML once, not once per key. Documents are shared: callers must not change them
(the :mod:`fplus.cluster_manager.sealing.manifest` functions never change their arguments).

A SealedSecret as we write it (maps of plain strings) is rendered by :func:`plain_yaml`
without PyYAML's representer, which cost more than the rest of a seal's edit; its text is
exactly what PyYAML writes. Anything else (lists, numbers, a string YAML would quote, a map
appearing twice) goes to PyYAML. Such a text is read back without PyYAML too
(:func:`plain_document`: a file another process wrote, which this one never rendered), and
only when rendering what was read gives the very same text.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from typing import Any

from yaml.resolver import Resolver

from ... import sealing
from ...formats.manifest_yaml import load_documents, render_document

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
        text = plain_yaml(doc)
        if text is None:
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
    plain = plain_document(content)
    if plain is not None:
        return plain
    try:
        docs = load_documents(content)
    except Exception as exc:  # unparsable YAML in the repo
        raise sealing.ManifestError(f"unparsable YAML: {exc}") from exc
    return docs[0] if docs else None


_PLAIN = re.compile(r"[A-Za-z0-9][-A-Za-z0-9._/+=]*\Z")
"""Strings PyYAML writes plain in block context (no indicator, space, colon or quote) unless
an implicit resolver claims them (``true``, ``1.5``): those it writes in single quotes."""
_SIMPLE_KEY = 128
"""PyYAML writes a key this long or longer as an explicit ``? key``."""


def _scalar(text: object) -> str | None:
    """``text`` as PyYAML writes a string of :data:`_PLAIN`'s characters; None otherwise."""
    if not isinstance(text, str) or not _PLAIN.match(text):
        return None
    resolvers = Resolver.yaml_implicit_resolvers.get(text[0], ())
    return f"'{text}'" if any(pattern.match(text) for _, pattern in resolvers) else text


def plain_yaml(doc: Any) -> str | None:
    """``doc`` as :func:`~fplus.cluster_manager.formats.manifest_yaml.render_document`
    writes it, when it is a map of such strings and of such maps (each map once; empty
    ones as ``{}``); None for anything else."""
    if not isinstance(doc, dict) or not doc:
        return None
    lines: list[str] = []
    seen: set[int] = set()
    return "".join(lines) if _block(doc, "", lines, seen) else None


def _block(node: dict[Any, Any], indent: str, lines: list[str], seen: set[int]) -> bool:
    if id(node) in seen:
        return False  # PyYAML would write an anchor and an alias
    seen.add(id(node))
    for name, value in node.items():
        key = _scalar(name)
        if key is None or len(name) >= _SIMPLE_KEY:
            return False
        if isinstance(value, dict):
            if not value:
                lines.append(f"{indent}{key}: {{}}\n")
                continue
            lines.append(f"{indent}{key}:\n")
            if not _block(value, indent + "  ", lines, seen):
                return False
        else:
            text = _scalar(value)
            if text is None:
                return False
            lines.append(f"{indent}{key}: {text}\n")
    return True


MAX_DEPTH = 16
"""Maps nested deeper are left to PyYAML (and its checks): a SealedSecret has four levels."""


def _unquoted(text: str) -> str:
    return text[1:-1] if len(text) >= 2 and text[0] == text[-1] == "'" else text


def plain_document(content: bytes) -> dict[str, Any] | None:
    """The map a text :func:`plain_yaml` renders stands for, read without PyYAML; None for
    any text that is not exactly :func:`plain_yaml`'s rendering of what was read (PyYAML
    then reads it, with its checks)."""
    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if not text.endswith("\n"):
        return None
    root: dict[str, Any] = {}
    stack = [root]  # the open maps, one per two spaces of indent
    for line in text[:-1].split("\n"):
        name = line.lstrip(" ")
        indent = len(line) - len(name)
        if indent % 2 or indent // 2 >= len(stack):
            return None
        del stack[indent // 2 + 1:]
        key, sep, value = name.partition(": ")
        if sep:
            stack[-1][_unquoted(key)] = {} if value == "{}" else _unquoted(value)
        elif name.endswith(":") and len(stack) < MAX_DEPTH:
            child: dict[str, Any] = {}
            stack[-1][_unquoted(name[:-1])] = child
            stack.append(child)
        else:
            return None
    return root if root and plain_yaml(root) == text else None
