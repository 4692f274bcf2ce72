"""HTTP transport: pooled session, Bearer auth, retries and error mapping."""

from __future__ import annotations

import json
import logging
import math
import os
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, TypeAlias, TypedDict, Unpack

import urllib3
from urllib3.exceptions import (
    ConnectTimeoutError,
    NewConnectionError,
    ProtocolError,
    ReadTimeoutError,
)

from fplus.jsontypes import JsonObject, JsonValue

from ._token import TokenCache, parse_token_response
from .backoff import full_jitter, header_retry_after
from .errors import ConfigStoreError, ConnectionFailed, NotFound, Unauthorized, error_for

log = logging.getLogger(__name__)

NO_BODY: Final = object()
"""Sentinel: send no request body (``None`` means the JSON value ``null``)."""

JSON = "application/json"
MERGE_PATCH = "application/merge-patch+json"
_IDEMPOTENT = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS"})

Params = Sequence[tuple[str, str]] | Mapping[str, str] | None



class RequestOptions(TypedDict, total=False):
    """What :meth:`Transport.request` takes beyond its method and path."""

    body: object
    content_type: str
    headers: Mapping[str, str] | None
    params: Params
    auth: bool


Credentials: TypeAlias = Callable[[], tuple[str, str]]
"""Returns ``(username, password)``; called at every token fetch (see ConfigStoreClient)."""


# No answer arrived; retried whatever the method. ``ConnectionError`` (refused, reset, ...)
# lets a custom ``send`` say the same without urllib3.
_CONNECTION_ERRORS = (NewConnectionError, ConnectTimeoutError, ProtocolError, ConnectionError)
# The request may have been acted on; retried only for idempotent methods.
_READ_TIMEOUTS = (ReadTimeoutError, TimeoutError)
MAX_RETRY_AFTER = 60.0
"""The longest a request waits, as a 503's ``Retry-After`` asks, before its next try."""


@dataclass(frozen=True)
class Response:
    """What the client needs of an HTTP response.

    ``headers`` should be case-insensitive (urllib3's ``HTTPHeaderDict``); the client reads
    ``ETag`` with that spelling.
    """

    status_code: int
    content: bytes
    headers: Mapping[str, str]

    def json(self) -> JsonValue:
        """The body parsed as JSON (ValueError if it is not)."""
        parsed: JsonValue = json.loads(self.content)
        return parsed

    @property
    def text(self) -> str:
        """The body as text."""
        return self.content.decode("utf-8", "replace")


Send: TypeAlias = Callable[[str, str, bytes | None, dict[str, str], float], Response]
"""Sends one HTTP request: ``(method, url, body, headers, timeout) -> Response``.

The seam under :class:`ConfigStoreClient` (the default sends through a urllib3 pool).
It answers every status as a :class:`Response`; it raises ``ConnectionError`` (or a urllib3
connection error) when no answer arrived, retried like any connection failure, and
``TimeoutError`` when none arrived in time, retried for idempotent methods only.
"""


def trusted_ca_bundle() -> str | None:
    """The PEM CA bundle HTTPS is verified against: ``FPLUS_CA_FILE``, else the usual
    ``REQUESTS_CA_BUNDLE`` / ``SSL_CERT_FILE``; None for the system's CAs."""
    return (os.environ.get("FPLUS_CA_FILE") or os.environ.get("REQUESTS_CA_BUNDLE")
            or os.environ.get("SSL_CERT_FILE") or None)


def _pool_for(base_url: str) -> urllib3.PoolManager:
    """A connection pool, through the environment's proxy for this URL if it names one."""
    parts = urllib.parse.urlsplit(base_url)
    bundle = trusted_ca_bundle()  # None: the system's (urllib3's default)
    proxy = urllib.request.getproxies().get(parts.scheme)
    if proxy and not urllib.request.proxy_bypass(parts.hostname or ""):
        return urllib3.ProxyManager(proxy, maxsize=32, retries=False, block=False,
                                    ca_certs=bundle)
    return urllib3.PoolManager(maxsize=32, retries=False, block=False, ca_certs=bundle)


def parse_body(resp: Response) -> JsonValue:
    """The response body as JSON if parseable, else text, else None when empty (a body
    nested past the parser's depth is text too: it must not escape as a RecursionError)."""
    if resp.status_code == 204 or not resp.content:
        return None
    try:
        return resp.json()
    except (ValueError, RecursionError):
        return resp.text


def json_objects(value: JsonValue) -> list[JsonObject]:
    """The JSON objects of an answer that should be an array of them."""
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def strip_etag(header: str | None) -> str | None:
    """``W/"abc"`` or ``"abc"`` → ``abc``; None stays None."""
    if not header:
        return None
    tag = header.strip()
    if tag.startswith("W/"):
        tag = tag[2:]
    return tag.strip('"') or None


class Transport:
    """Sends requests to one Config Store; thread-safe."""

    def __init__(
        self,
        base_url: str,
        username: str | None,
        password: str | None,
        *,
        timeout: float,
        retries: int,
        backoff: float,
        send: Send | None = None,
        credentials: Credentials | None = None,
        token: str | None = None,
        login_refused: Callable[[Unauthorized], None] | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._login_refused = login_refused
        self._fixed_token = token
        if credentials is None and username is not None:
            fixed = (username, password or "")
            credentials = lambda: fixed  # noqa: E731
        self._credentials = credentials
        self.timeout = timeout
        self.retries = max(0, retries)
        self.backoff = max(0.0, backoff)
        self.pool = _pool_for(self.base_url)
        self.send = send
        """A custom :data:`Send`, or None to send through :attr:`pool`."""
        self.tokens = TokenCache(self._fetch_token)

    @property
    def has_credentials(self) -> bool:
        """Whether requests are authenticated at all."""
        return self._credentials is not None or self._fixed_token is not None

    def close(self) -> None:
        """Release pooled connections."""
        self.pool.clear()

    def token(self) -> str:
        """A valid Bearer token (cached; fetched when missing or about to expire)."""
        if not self.has_credentials:
            raise Unauthorized(401, None, "no Config Store credentials configured")
        return self.tokens.get()

    def _fetch_token(self) -> tuple[str, float]:
        """``POST /token`` with HTTP Basic auth, asking the credentials provider afresh (a
        fixed token is returned as it is: it lasts as long as the server keeps it)."""
        if self._fixed_token is not None:
            return self._fixed_token, math.inf
        assert self._credentials is not None
        try:
            username, password = self._credentials()
        except Exception as exc:  # a provider reading files or a vault may fail any way
            raise Unauthorized(
                401, None, f"no Config Store credentials: {type(exc).__name__}: {exc}"
            ) from exc
        try:
            resp = self._send("POST", "/token", basic=(username, password))
        except Unauthorized as exc:
            if self._login_refused is not None:
                self._login_refused(exc)
            raise
        try:
            token, expires = parse_token_response(parse_body(resp), time.time())
        except ValueError as exc:
            raise ConfigStoreError(resp.status_code, None, f"bad token response: {exc}") from None
        log.debug("fetched a new Config Store token")
        return token, expires

    def request(
        self,
        method: str,
        path: str,
        *,
        body: object = NO_BODY,
        content_type: str = JSON,
        headers: Mapping[str, str] | None = None,
        params: Params = None,
        auth: bool = True,
    ) -> Response:
        """Send ``method path`` and return the 2xx response, else raise ConfigStoreError.

        With ``auth``, a Bearer token is attached; a 401 refetches it and retries once.
        """
        data = None if body is NO_BODY else json.dumps(body).encode()
        hdrs = dict(headers or {})
        if data is not None:
            hdrs["Content-Type"] = content_type
        if not (auth and self.has_credentials):
            return self._send(method, path, data=data, headers=hdrs, params=params)
        token = self.tokens.get()
        try:
            return self._send(method, path, data=data, headers=hdrs, params=params, token=token)
        except Unauthorized:
            log.info("%s %s: 401, refreshing the token and retrying once", method, path)
            self.tokens.invalidate(token)
        token = self.tokens.get()
        return self._send(method, path, data=data, headers=hdrs, params=params, token=token)

    def call(self, method: str, path: str, **kwargs: Unpack[RequestOptions]) -> JsonValue:
        """Like :meth:`request` but return the parsed body (None when empty)."""
        return parse_body(self.request(method, path, **kwargs))

    def call_or_none(self, method: str, path: str,
                     **kwargs: Unpack[RequestOptions]) -> JsonValue:
        """Like :meth:`call` but a 404 answers None."""
        try:
            return self.call(method, path, **kwargs)
        except NotFound:
            return None

    def _send(
        self,
        method: str,
        path: str,
        *,
        data: bytes | None = None,
        headers: Mapping[str, str] | None = None,
        params: Params = None,
        token: str | None = None,
        basic: tuple[str, str] | None = None,
    ) -> Response:
        """One logical request: retries connection errors and 5xx with jittered back-off."""
        url = self.base_url + path
        if params:
            url += "?" + urllib.parse.urlencode(params, doseq=True)
        hdrs = dict(headers or {})
        hdrs.setdefault("Accept", JSON)
        if token is not None:
            hdrs["Authorization"] = f"Bearer {token}"
        elif basic is not None:
            hdrs.update(urllib3.util.make_headers(basic_auth=f"{basic[0]}:{basic[1]}"))
        context = f"{method} {path}"
        send = self.send
        attempt = 0
        while True:
            try:
                if send is None:
                    raw = self.pool.request(method, url, body=data, headers=hdrs,
                                            timeout=self.timeout, redirect=False)
                    resp = Response(raw.status, raw.data, raw.headers)
                else:
                    resp = send(method, url, data, hdrs, self.timeout)
            except (*_CONNECTION_ERRORS, *_READ_TIMEOUTS) as exc:
                retryable = not isinstance(exc, _READ_TIMEOUTS) or method in _IDEMPOTENT
                if not retryable or attempt >= self.retries:
                    raise ConnectionFailed(0, None, f"{context}: {type(exc).__name__}") from exc
                log.warning("%s: %s, retrying", context, type(exc).__name__)
            else:
                status = resp.status_code
                log.debug("%s -> %d", context, status)
                if 200 <= status < 300:
                    return resp
                asked = header_retry_after(resp.headers) if status >= 500 else None
                if status < 500 or attempt >= self.retries:
                    raise error_for(status, parse_body(resp), context, asked)
                log.warning("%s: %d, retrying%s", context, status,
                            f" in {asked:.0f} s as asked" if asked else "")
                if asked is not None:
                    time.sleep(max(self._delay(attempt), min(asked, MAX_RETRY_AFTER)))
                    attempt += 1
                    continue
            time.sleep(self._delay(attempt))
            attempt += 1

    def _delay(self, attempt: int) -> float:
        """Exponential back-off with full jitter: drawn evenly up to twice ``backoff *
        2^attempt`` (so as long as before on average), at most 20 s."""
        return full_jitter(attempt + 1, 2 * self.backoff, 20.0)
