"""What a change does to one cluster, as text: the repo files and Edge deployment entries
added, changed and removed, and a unified diff of them capped at :data:`MAX_LINES` lines (the
rest counted). The data of a Secret and the encrypted data of a SealedSecret are never shown:
each of their values reads ``<hidden>``, and on the new side ``<hidden, changed>`` where it
changes (so the diff shows that it changed, and nothing of what it holds)."""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass

import yaml

HIDDEN, CHANGED = "<hidden>", "<hidden, changed>"
MAX_LINES = 200
"""Diff lines shown per cluster; the answer counts the rest (``omitted``)."""
_SECRET_KIND = re.compile(r"^\s*kind:\s*[\"']?(Sealed)?Secret\b", re.MULTILINE)
_SECRET_FIELDS = {"Secret": ("data", "stringData"), "SealedSecret": ("spec.encryptedData",)}


@dataclass(frozen=True)
class Changed:
    """Names added, changed and removed, each sorted."""

    added: list[str]
    changed: list[str]
    removed: list[str]

    def view(self) -> dict[str, list[str]]:
        return {"added": self.added, "changed": self.changed, "removed": self.removed}


def same(a: object, b: object) -> bool:
    """Whether two JSON values would be written alike: equal, with the same types (``1``,
    ``1.0`` and ``true`` differ) and their keys in the same order."""
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        assert isinstance(b, dict)
        return list(a) == list(b) and all(same(v, b[k]) for k, v in a.items())
    if isinstance(a, list):
        assert isinstance(b, list)
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def changed_names(before: Mapping[str, object], after: Mapping[str, object]) -> Changed:
    """Which of the named texts (or JSON values: :func:`same`) are new, different or
    gone."""
    return Changed(sorted(set(after) - set(before)),
                   sorted(k for k in set(before) & set(after) if not same(before[k], after[k])),
                   sorted(set(before) - set(after)))


def _docs(text: str) -> list[object] | None:
    try:
        return list(yaml.safe_load_all(text))
    except yaml.YAMLError:
        return None


def _secret_maps(doc: object) -> list[dict[str, object]]:
    """The maps of ``doc`` whose values are secret (none unless a Secret or SealedSecret)."""
    if not isinstance(doc, dict):
        return []
    found = []
    for path in _SECRET_FIELDS.get(str(doc.get("kind")), ()):
        node: object = doc
        for part in path.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        if isinstance(node, dict):
            found.append(node)
    return found


def _masked(text: str, other: str | None, changed: bool) -> str:
    """``text`` with its secret values hidden (with ``changed``, ``<hidden, changed>`` where
    ``other``, the same file before, holds another value); unchanged if it holds none (a
    file that does not read as YAML but names a Secret kind is hidden whole)."""
    if not _SECRET_KIND.search(text):
        return text
    docs, others = _docs(text), _docs(other) if other is not None else None
    if docs is None:
        return CHANGED if changed and text != other else HIDDEN
    if not any(_secret_maps(d) for d in docs):
        return text
    for index, doc in enumerate(docs):
        theirs = _secret_maps(others[index]) if others and index < len(others) else []
        for n, values in enumerate(_secret_maps(doc)):
            there = theirs[n] if n < len(theirs) else {}
            for key in values:
                values[key] = CHANGED if changed and there.get(key) != values[key] \
                    else HIDDEN
    return yaml.safe_dump_all(docs, sort_keys=False)


def masked_pair(before: str | None, after: str | None) -> tuple[str, str]:
    """Both sides of one file with their secret values hidden, those that change marked on
    the new side."""
    return (_masked(before, after, False) if before is not None else "",
            _masked(after, before, True) if after is not None else "")


def entry_text(entry: object) -> str:
    """An Edge deployment entry as the diff shows it (keys sorted, one per line)."""
    return json.dumps(entry, indent=2, sort_keys=True) + "\n"


def unified(before: Mapping[str, str], after: Mapping[str, str],
            names: Changed) -> list[str]:
    """The unified diff lines of every added, changed and removed text."""
    lines: list[str] = []
    for name in sorted({*names.added, *names.changed, *names.removed}):
        old, new = masked_pair(before.get(name), after.get(name))
        lines += difflib.unified_diff(old.splitlines(), new.splitlines(),
                                      "/dev/null" if name not in before else f"a/{name}",
                                      "/dev/null" if name not in after else f"b/{name}",
                                      lineterm="")
    return lines


def capped(lines: list[str], limit: int = MAX_LINES) -> tuple[str, int]:
    """The first ``limit`` lines as text, and how many were left out."""
    shown = lines[:limit]
    return "\n".join(shown) + ("\n" if shown else ""), len(lines) - len(shown)
