"""Syntax checks for the names that end up in the script: file names and Kubernetes names."""

from __future__ import annotations

import re

from fplus.kubenames import is_dns1123_label, is_dns1123_subdomain

from .errors import BootstrapError

# A file written into the script's temp dir: one plain path component, never hidden, no ".."
# anywhere (as the entry's JSON schema), safe inside single quotes.
_FILE_NAME = re.compile(r"(?!.*\.\.)[A-Za-z0-9][A-Za-z0-9._-]{0,254}")


def check_file_name(name: object) -> str:
    """``name`` if it is a plain file name (``[A-Za-z0-9][A-Za-z0-9._-]*``), else raise."""
    if not isinstance(name, str) or not _FILE_NAME.fullmatch(name):
        raise BootstrapError(f"file name {name!r} is not a plain name "
                             "([A-Za-z0-9][A-Za-z0-9._-]*, no '..', at most 255 characters)")
    return name


def check_dns1123_label(value: object, what: str) -> str:
    """``value`` if it is a DNS-1123 label (namespaces), else raise."""
    if not is_dns1123_label(value):
        raise BootstrapError(f"{what} {value!r} is not a DNS-1123 label")
    return value


def check_dns1123_subdomain(value: object, what: str) -> str:
    """``value`` if it is a DNS-1123 subdomain (most object names), else raise."""
    if not is_dns1123_subdomain(value):
        raise BootstrapError(f"{what} {value!r} is not a DNS-1123 subdomain")
    return value
