"""URL paths and their segments, search query encoding and ETag conditions."""

from __future__ import annotations

import json
from collections.abc import Mapping
from urllib.parse import quote


def seg(value: str) -> str:
    """Quote one path segment (UUIDs pass unchanged)."""
    return quote(str(value), safe="@")


def entry_path(app: str, obj: str) -> str:
    """The path of the ``app`` entry of ``obj``."""
    return f"/v2/app/{seg(app)}/object/{seg(obj)}"


def identity_path(name: str) -> str:
    """The path finding the principal with Kerberos name ``name`` (``name@REALM``) or login
    name ``name``."""
    kind = "kerberos" if "@" in name else "login"
    return f"/v2/identity/{kind}/{seg(name)}"


def password_path(principal: str) -> str:
    """The path giving ``principal`` a server-generated password."""
    return f"/v2/principal/{seg(principal)}/password"


def search_params(
    query: Mapping[str, object], select: Mapping[str, str] | None = None
) -> list[tuple[str, str]]:
    """Encode a ConfigDB search: ``path=<JSON value>`` (None → ``undefined``), ``@name=path``."""
    params = [
        (key, "undefined" if value is None else json.dumps(value, separators=(",", ":")))
        for key, value in query.items()
    ]
    params.extend((f"@{name}", sel) for name, sel in (select or {}).items())
    return params


def conditions(if_match: str | None, if_none_match: str | None = None) -> dict[str, str]:
    """``If-Match``/``If-None-Match`` headers; bare etags get quoted, ``*`` stays."""
    headers = {}
    for name, tag in (("If-Match", if_match), ("If-None-Match", if_none_match)):
        if tag is not None:
            headers[name] = tag if tag == "*" or tag.endswith('"') else f'"{tag}"'
    return headers
