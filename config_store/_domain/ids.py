"""UUID form checks (lower-case, as ACS validates path parameters)."""

from __future__ import annotations

import re

UUID_PATTERN = "^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"
_UUID = re.compile(UUID_PATTERN)


def is_uuid(value: object) -> bool:
    """True for a lower-case UUID string."""
    return isinstance(value, str) and bool(_UUID.match(value))
