"""The bootstrap script: a rendered Bootstrap script entry plus extra files, packed into one.

The entry (Config Store app "Bootstrap script") is ``{files: {NAME: TEXT}, wrapper: TEXT}``,
already rendered by the caller. Its wrapper holds the placeholder ``@@@@@`` alone on a line;
every file (the entry's, then the caller's) is packed there as a here-document, so running the
script writes them all into the current directory before the wrapper's next line.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .errors import BootstrapError
from .heredoc import choose_marker, pack_file
from .names import check_file_name

PLACEHOLDER = "@@@@@"
_PLACEHOLDER_RUN = re.compile(r"@{5,}")
_PLACEHOLDER_LINE = re.compile(rf"^[ \t]*{PLACEHOLDER}$", re.MULTILINE)


def _text_files(files: object, what: str) -> dict[str, str]:
    """``files`` checked: a mapping of plain names to text."""
    if not isinstance(files, Mapping):
        raise BootstrapError(f"{what} must be a mapping of file name to text, "
                             f"not {type(files).__name__}")
    checked: dict[str, str] = {}
    for name, content in files.items():
        check_file_name(name)
        if not isinstance(content, str):
            raise BootstrapError(f"{what}: {name} must be text, not {type(content).__name__}")
        if "\0" in content:
            raise BootstrapError(f"{what}: {name} contains a NUL byte (only text is allowed)")
        checked[name] = content
    return checked


def _split_wrapper(wrapper: object) -> tuple[str, str]:
    """The wrapper's text before and after its one placeholder line."""
    if not isinstance(wrapper, str):
        raise BootstrapError(f"the wrapper must be text, not {type(wrapper).__name__}")
    runs = _PLACEHOLDER_RUN.findall(wrapper)
    if not runs:
        raise BootstrapError(f"the wrapper has no {PLACEHOLDER} placeholder for the files "
                             "(render it with files set to that placeholder)")
    if len(runs) > 1 or runs[0] != PLACEHOLDER:
        raise BootstrapError(f"the wrapper must hold exactly one {PLACEHOLDER} placeholder")
    if not _PLACEHOLDER_LINE.search(wrapper):
        raise BootstrapError(f"the {PLACEHOLDER} placeholder must stand alone on its line")
    before, after = wrapper.split(PLACEHOLDER)
    return before, after


@dataclass(frozen=True)
class Script:
    """A checked entry and its files, ready to pack; more files can still be added."""

    before: str
    after: str
    files: dict[str, str]

    def with_files(self, files: Mapping[str, str]) -> Script:
        """This script plus ``files`` (checked; a name it already has is an error)."""
        extra = _text_files(files, "the extra files")
        clashes = sorted(self.files.keys() & extra.keys())
        if clashes:
            raise BootstrapError(f"file(s) {', '.join(clashes)} both in the entry and added")
        return Script(self.before, self.after, {**self.files, **extra})

    def text(self, marker: str | None = None) -> str:
        """The whole script. ``marker`` (the here-document terminator) is random unless
        given; a given marker must not be a line of any file."""
        chosen = choose_marker(list(self.files.values()), marker)
        body = "\n".join(pack_file(name, content, chosen)
                         for name, content in self.files.items())
        return self.before + body + self.after


def prepare_script(entry: Mapping[str, Any], files: Mapping[str, str]) -> Script:
    """The entry's wrapper and files plus ``files``, checked but not packed yet.

    A name in both the entry and ``files`` is an error, not an override.
    """
    if not isinstance(entry, Mapping):
        raise BootstrapError(f"the entry must be a mapping, not {type(entry).__name__}")
    if "files" not in entry or "wrapper" not in entry:
        raise BootstrapError("the entry must have both 'files' and 'wrapper'")
    before, after = _split_wrapper(entry["wrapper"])
    return Script(before, after, _text_files(entry["files"], "the entry's files")
                  ).with_files(files)


def build_script(entry: Mapping[str, Any], files: Mapping[str, str], *,
                 marker: str | None = None) -> str:
    """The whole script: the entry's wrapper with its files and ``files`` packed in
    (:func:`prepare_script`, then :meth:`Script.text`)."""
    return prepare_script(entry, files).text(marker)
