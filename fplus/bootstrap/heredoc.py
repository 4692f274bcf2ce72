"""Files packed as shell here-documents that recreate them byte for byte.

Each file becomes ``cat > 'NAME' <<'MARKER'`` with its content and the terminator line. The
marker is quoted, so the shell expands nothing inside. A here-document always ends in a
newline; a file that does not is written through a command substitution instead, which strips
exactly the one newline the here-document adds.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterable

from .errors import BootstrapError

MARKER_PREFIX = "FPLUS_EOF_"
# Quoted (<<'M') any word works; keep to characters that need no thought anywhere.
_MARKER = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,127}")


def new_marker() -> str:
    """A fresh random terminator: the prefix and 15 random bytes, base64url (as ACS)."""
    return MARKER_PREFIX + secrets.token_urlsafe(15)


def collides(marker: str, contents: Iterable[str]) -> bool:
    """Whether ``marker`` is a whole line of any content (it would end the file early).

    Searched in place, without splitting a content into lines: a 1 MB Flux export costs one
    scan, not 30,000 new strings."""
    line = f"\n{marker}\n"
    return any(content == marker or content.startswith(line[1:])
               or content.endswith(line[:-1]) or line in content for content in contents)


def choose_marker(contents: list[str], marker: str | None = None) -> str:
    """``marker`` if it is usable for ``contents``, else raise; without one, a fresh marker."""
    if marker is not None:
        if not isinstance(marker, str) or not _MARKER.fullmatch(marker):
            raise BootstrapError(f"marker {marker!r} is not a plain word "
                                 "([A-Za-z_][A-Za-z0-9_-]*)")
        if collides(marker, contents):
            raise BootstrapError(f"marker {marker!r} occurs as a line in a file")
        return marker
    while True:  # a random marker in a file is astronomically unlikely; never trust luck
        marker = new_marker()
        if not collides(marker, contents):
            return marker


def pack_file(name: str, content: str, marker: str) -> str:
    """Shell text that writes ``content`` to ``./name`` (name and marker already checked)."""
    if content.endswith("\n"):
        return f"cat > '{name}' <<'{marker}'\n{content}{marker}"
    return f"printf '%s' \"$(cat <<'{marker}'\n{content}\n{marker}\n)\" > '{name}'"
