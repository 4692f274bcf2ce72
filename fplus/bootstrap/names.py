"""Syntax checks for the file names that end up in the script (Kubernetes names are checked
with :func:`fplus.kubenames.checked`)."""

from __future__ import annotations

import re

from fplus.kubenames import checked

from .errors import BootstrapError

# A file written into the script's temp dir: one plain path component, never hidden, no ".."
# anywhere (as the entry's JSON schema), safe inside single quotes.
_FILE_NAME = re.compile(r"(?!.*\.\.)[A-Za-z0-9][A-Za-z0-9._-]{0,254}")


def _is_file_name(name: object) -> bool:
    return isinstance(name, str) and _FILE_NAME.fullmatch(name) is not None


def check_file_name(name: object) -> str:
    """``name`` if it is a plain file name (``[A-Za-z0-9][A-Za-z0-9._-]*``), else raise."""
    return checked(name, _is_file_name, lambda: BootstrapError(
        f"file name {name!r} is not a plain name "
        "([A-Za-z0-9][A-Za-z0-9._-]*, no '..', at most 255 characters)"))
