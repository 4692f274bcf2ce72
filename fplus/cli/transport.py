"""What ``fplus`` says when a server cannot be reached: one plain sentence naming what was
tried, what failed (in words, never an exception's class name) and what to check."""

from __future__ import annotations

from collections.abc import Iterator

import requests
from urllib3 import exceptions as low

BAD_URL = (requests.exceptions.InvalidSchema, requests.exceptions.MissingSchema,
           requests.exceptions.InvalidURL, low.LocationValueError)
TLS = (requests.exceptions.SSLError, low.SSLError)
TIMEOUT = (requests.exceptions.Timeout, low.TimeoutError)


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and what it wraps (requests wraps urllib3's errors in its args and causes)."""
    seen: set[int] = set()
    todo: list[object] = [exc]
    while todo:
        found = todo.pop()
        if not isinstance(found, BaseException) or id(found) in seen:
            continue
        seen.add(id(found))
        yield found
        todo += [found.__cause__, found.__context__, getattr(found, "reason", None),
                 *found.args]


def reason(exc: BaseException) -> tuple[str, str]:
    """Why a request failed, in words, and what kind of failure it was (``url``, ``tls``,
    ``dns``, ``timeout`` or ``refused``)."""
    chain = list(_chain(exc))

    def any_of(kinds: tuple[type[BaseException], ...]) -> bool:
        return any(isinstance(e, kinds) for e in chain)

    if any_of(BAD_URL):
        return "that is not an http:// or https:// URL", "url"
    if any_of(TLS):
        return ("the TLS handshake failed (its certificate is not trusted, or it does not "
                "speak HTTPS)"), "tls"
    if any_of((low.NameResolutionError,)):
        return "its host name does not resolve", "dns"
    if any_of(TIMEOUT) and not any_of((low.NewConnectionError,)):
        return "it did not answer in time", "timeout"
    return "nothing answered there (the connection was refused or dropped)", "refused"


def unreachable(what: str, url: str, exc: BaseException, where: str) -> str:
    """The sentence for a request to ``what`` at ``url`` that failed with ``exc``; ``where``
    says how its URL is given (e.g. "the URL of `fplus login` (or FPLUS_URL)")."""
    why, kind = reason(exc)
    if kind == "tls":
        check = (f"check the scheme of {where}, and give a private CA with --ca-file (or "
                 "FPLUS_CA_FILE)")
    elif kind == "url":
        check = f"check {where}"
    else:
        check = f"check that {what} runs there and {where}"
    return f"cannot reach {what} at {url}: {why}; {check}"
