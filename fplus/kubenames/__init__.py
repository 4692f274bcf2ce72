"""Kubernetes name rules (apimachinery ``validation.go``), shared by every package.

Names that reach Kubernetes objects, file paths or Secret keys are checked against these
before use. Each check answers True/False; :func:`checked` raises a caller's own refusal
(each package words it and picks its exception). A True also tells the type checker the value
is a ``str`` (a ``TypeGuard``: False says nothing of its type).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TypeGuard

_LABEL = r"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?"
DNS1123_LABEL = re.compile(_LABEL)
DNS1123_SUBDOMAIN = re.compile(rf"{_LABEL}(?:\.{_LABEL})*")
SECRET_KEY = re.compile(r"[-._a-zA-Z0-9]+")

LABEL_MAX = 63
SUBDOMAIN_MAX = 253
KEY_MAX = 253


def is_dns1123_label(value: object, max_length: int = LABEL_MAX) -> TypeGuard[str]:
    """True for a DNS-1123 label (namespaces, most names we derive): ``[a-z0-9-]``, at most
    ``max_length`` characters, starting and ending alphanumeric."""
    return (isinstance(value, str) and len(value) <= max_length
            and DNS1123_LABEL.fullmatch(value) is not None)


def is_dns1123_subdomain(value: object, max_length: int = SUBDOMAIN_MAX) -> TypeGuard[str]:
    """True for a DNS-1123 subdomain (Secret and most object names): labels joined by dots."""
    return (isinstance(value, str) and len(value) <= max_length
            and DNS1123_SUBDOMAIN.fullmatch(value) is not None)


def is_secret_key(value: object) -> TypeGuard[str]:
    """True for a Secret/ConfigMap data key: ``[-._a-zA-Z0-9]+``, not ``.``/``..``, no
    leading ``..``, at most 253 characters."""
    return (isinstance(value, str) and len(value) <= KEY_MAX
            and SECRET_KEY.fullmatch(value) is not None
            and value not in (".", "..") and not value.startswith(".."))


def checked(value: object, valid: Callable[[object], bool],
            refusal: Callable[[], Exception]) -> str:
    """``value`` if ``valid(value)`` (one of the checks above), else raise ``refusal()``: the
    one check-and-refuse behind every package's name checks. ``refusal`` is called only for
    a refused value, so its message may show it."""
    if not valid(value):
        raise refusal()
    assert isinstance(value, str)
    return value
