"""Path segments of the Cluster Manager's routes, validated before anything uses them."""

from __future__ import annotations

import re

from werkzeug.exceptions import BadRequest
from werkzeug.routing import BaseConverter

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


class ClusterConverter(BaseConverter):
    """``<cluster:c>``: any segment matches; anything but a lower-case UUID answers 400."""

    regex = "[^/]+"

    def to_python(self, value: str) -> str:
        if not _UUID.fullmatch(value):
            raise BadRequest(f"cluster must be a UUID, not {value[:80]!r}")
        return value
