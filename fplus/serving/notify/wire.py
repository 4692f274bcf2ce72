"""notify/v2 on the wire (ACS ``docs/services/notify-v2.md``): what its clients and servers
both say. Imports nothing of the project, so the Config Store's client library shares it with
the servers.

A session opens with the client's ``Bearer <token>``, answered by a status alone
(:data:`AUTHENTICATED` or a refusal); then each request is a JSON object with the ``uuid`` of
its subscription, each answer ``{"status", "uuid", ...}``. A subscription the server ends
(``CLOSE``: :data:`ENDED`, or a refusal) answers with a status of 400 or more. A client
subscribing again may offer what it last saw (:data:`RESUME`); the first update then says
:data:`UNCHANGED` instead of repeating it.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from typing import Any

PATH = "/notify/v2"
"""Where a service serves notify/v2 (below its base URL)."""

BEARER = re.compile(r"^Bearer ([A-Za-z0-9+/=]+)$")
"""The first message, carrying the session's token."""
AUTHENTICATED, BAD_FIRST_MESSAGE, UNKNOWN_TOKEN = "200", "400", "401"
CROWDED, CANNOT_CHECK = "429", "503"
"""The answers to the first message: in, not ``Bearer <token>``, a token proving nobody,
too many connections of its principal, the token cannot be checked now."""

NORMAL, POLICY, TOO_BIG, TRY_AGAIN = 1000, 1008, 1009, 1013
"""WebSocket close codes: a normal end, a policy violation, a message too big, try later."""

RESUME = "resume"
"""Our extension: the request field in which a client that subscribes again offers what it
last saw (:func:`selection_digest` for a SEARCH, the entry's etag for a WATCH)."""
UNCHANGED = 304
"""The response status of a subscription's first update when what the client offered is
still current: no body, no children; the client keeps what it holds."""
RESUME_MAX = 200
"""The longest resume token a server reads (an etag or a digest is far shorter)."""

CLOSE = "CLOSE"
"""The method that ends a subscription."""
ENDED = 410
"""The status of the answer to ``CLOSE``."""


def bearer(token: str) -> str:
    """The first message of a session opened with ``token``."""
    return f"Bearer {token}"


def request(sub_uuid: str, body: dict[str, Any]) -> str:
    """A client's request ``body`` (``{"method", ...}``) for subscription ``sub_uuid``."""
    return json.dumps({"uuid": sub_uuid, **body})


def close(sub_uuid: str) -> str:
    """A client's request to end subscription ``sub_uuid``."""
    return request(sub_uuid, {"method": CLOSE})


def dumps(value: Any) -> str:
    """Sorted compact ASCII JSON: equal updates give equal text, and its length is its size."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def reply(sub_uuid: str, status: int, error: str | None = None) -> str:
    """The text of a server's reply to the request for ``sub_uuid`` (no response in it)."""
    answer: dict[str, Any] = {"status": status, "uuid": sub_uuid}
    if error:
        answer["error"] = error
    return dumps(answer)


def close_reason(payload: bytes | str) -> str:
    """``code reason`` of a WebSocket close frame's payload ('' when it has none)."""
    data = payload.encode() if isinstance(payload, str) else payload
    if len(data) < 2:
        return ""
    code = int.from_bytes(data[:2], "big")
    text = data[2:].decode("utf-8", "replace").strip()
    return f"{code} {text}".strip()


def selection_digest(etags: Mapping[str, str]) -> str:
    """A SEARCH's resume token: a digest of its children (object uuid → etag, quotes
    stripped) that client and server both compute from what they hold."""
    digest = hashlib.blake2b(digest_size=16)
    for obj in sorted(etags):
        etag = etags[obj].strip('"')
        digest.update(f"{obj} {etag}\n".encode())
    return digest.hexdigest()
