"""Serving an OpenAPI document with the URL it is actually reached at as its server."""

from __future__ import annotations

import functools
import json
import re
from importlib import resources

_SERVERS = re.compile(r"^servers:\n(?:  .*\n)+", re.M)


@functools.lru_cache(maxsize=4)
def _document(name: str) -> str | None:
    doc = resources.files("fplus.spec").joinpath(name)
    return doc.read_text() if doc.is_file() else None


def document(name: str, server_url: str) -> str | None:
    """The installed ``fplus/spec/<name>`` with ``server_url`` as its only server (None: not
    installed)."""
    text = _document(name)
    if text is None:
        return None
    servers = f"servers:\n  - url: {json.dumps(server_url.rstrip('/'))}\n"
    return _SERVERS.sub(lambda _: servers, text, count=1)
