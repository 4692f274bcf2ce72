"""The notify/v2 requests both servers answer (the Config Store's subscriptions and the Git
server's watches): what a client's request is, how it is answered, and what is common to
every kind of subscription.

A request is a JSON object text with a ``uuid`` (the subscription's, chosen by the client);
anything else ends the connection (:class:`RequestRefused`, closed with 1008 and its
reason). ``{"uuid", "method": "CLOSE"}`` ends a subscription with ``{"status": 410,
"uuid"}``; every other request is the service's to open (its plug-in, ``open``), which
answers a refusal with :func:`reply` (``{"status", "uuid", "error"?}``) and a subscription
past the connection's cap with :func:`over_connection_cap`'s 429. Updates and replies are
sorted compact JSON (:func:`.wire.dumps`): equal updates give equal text.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..http.jsondoc import JSONRejected, loads_checked
from .wire import CLOSE, ENDED, reply

Request = dict[str, Any]


class RequestRefused(Exception):
    """A message that is not a request: the connection ends (1008) with this reason."""


def parse_request(message: str | bytes) -> tuple[str, Request]:
    """``(uuid, request)`` of a client message; :class:`RequestRefused` for anything else."""
    if not isinstance(message, str):
        raise RequestRefused("notify: requests are JSON text, not binary")
    try:
        req = loads_checked(message)
    except JSONRejected as exc:
        raise RequestRefused(f"notify: request refused: {exc}") from None
    if not isinstance(req, dict) or not isinstance(req.get("uuid"), str):
        raise RequestRefused("notify: request has no uuid")
    return req["uuid"], req


def dispatch(sub_uuid: str, req: Request, subs: dict[str, Any], send: Callable[[str], None],
             open_: Callable[[str, Request], None]) -> None:
    """Answer one request: CLOSE here (the subscription ends, 410), anything else by the
    service's ``open_(uuid, request)``."""
    if req.get("method") == CLOSE:
        subs.pop(sub_uuid, None)
        send(reply(sub_uuid, ENDED))
        return
    open_(sub_uuid, req)


def over_connection_cap(sub_uuid: str, subs: Mapping[str, Any], most: int) -> str | None:
    """The 429 error of a new subscription past ``most`` open on its connection (``subs``),
    None when it may open (a uuid already open is replaced, never refused)."""
    if sub_uuid not in subs and len(subs) >= most:
        return f"too many subscriptions on this connection (max {most})"
    return None
