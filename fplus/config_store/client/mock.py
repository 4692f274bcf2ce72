"""A scripted stand-in for the Config Store's HTTP side: test client users without a server.

:class:`MockTransport` is a :data:`~config_store.client.Send`; give it to
:class:`~config_store.client.ConfigStoreClient` and the client's auth, retries and error
mapping run over it unchanged::

    mock = MockTransport()
    mock.route("POST", "/token", reply(200, {"token": "t1", "expires_in": 3600}))
    mock.route("GET", "/v2/object", reply(503), reply(200, ["..."]))
    cs = ConfigStoreClient("http://cs.test", "alice", "pw", send=mock, backoff=0)
    assert cs.list_objects() == ["..."]
    assert len(mock.calls("GET", "/v2/object")) == 2
"""

from __future__ import annotations

import json
import threading
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final, TypeAlias

from urllib3 import HTTPHeaderDict

from fplus.jsontypes import JsonValue

from ._transport import Response

_EMPTY: Final = object()


@dataclass(frozen=True)
class Request:
    """One request a :class:`MockTransport` received (``headers`` are case-insensitive)."""

    method: str
    url: str
    body: bytes | None
    headers: Mapping[str, str]
    timeout: float

    @property
    def path(self) -> str:
        """The URL's path as sent (percent-encoding kept, no query)."""
        return urllib.parse.urlsplit(self.url).path

    @property
    def params(self) -> list[tuple[str, str]]:
        """The query parameters, in order."""
        return urllib.parse.parse_qsl(urllib.parse.urlsplit(self.url).query,
                                      keep_blank_values=True)

    def json(self) -> JsonValue:
        """The body parsed as JSON (None when there is no body)."""
        parsed: JsonValue = None if self.body is None else json.loads(self.body)
        return parsed


Handler: TypeAlias = Callable[[Request], Response]
Answer: TypeAlias = Response | Handler | BaseException
"""A canned response, a function of the request, or an exception to raise."""


def reply(status: int = 200, body: object = _EMPTY,
          headers: Mapping[str, str] | None = None) -> Response:
    """A response: ``body`` is sent as is if bytes, else as JSON; omitted, the body is empty."""
    hdrs = HTTPHeaderDict(headers or {})
    if body is _EMPTY:
        content = b""
    elif isinstance(body, bytes):
        content = body
    else:
        content = json.dumps(body).encode()
        hdrs.setdefault("Content-Type", "application/json")
    return Response(status, content, hdrs)


class MockTransport:
    """A :data:`~config_store.client.Send` answering from routes; records every request.

    Requests are routed by method and URL path (as sent, so a base URL's own path is part
    of it). A route's answers are used in turn and the last one repeats; an exception
    answer is raised (``ConnectionRefusedError()`` plays an unreachable server). Unrouted
    requests go to ``fallback``, by default an empty 404. Thread-safe.
    """

    def __init__(self, fallback: Handler | None = None) -> None:
        self._routes: dict[tuple[str, str], list[Answer]] = {}
        self._fallback = fallback
        self._lock = threading.Lock()
        self.requests: list[Request] = []

    def route(self, method: str, path: str, *answers: Answer) -> MockTransport:
        """Answer ``method path`` with ``answers`` (appended to any still queued)."""
        if not answers:
            raise ValueError("route() needs at least one answer")
        with self._lock:
            self._routes.setdefault((method.upper(), path), []).extend(answers)
        return self

    def calls(self, method: str, path: str) -> list[Request]:
        """The requests received for ``method path``, oldest first."""
        with self._lock:
            return [r for r in self.requests if r.method == method.upper() and r.path == path]

    def __call__(self, method: str, url: str, body: bytes | None, headers: dict[str, str],
                 timeout: float) -> Response:
        request = Request(method, url, body, HTTPHeaderDict(headers), timeout)
        with self._lock:
            self.requests.append(request)
            queue = self._routes.get((method, request.path))
            answer: Answer | None = None
            if queue:
                answer = queue.pop(0) if len(queue) > 1 else queue[0]
        if answer is None:
            return self._fallback(request) if self._fallback else reply(404)
        if isinstance(answer, BaseException):
            raise answer
        if isinstance(answer, Response):
            return answer
        return answer(request)
