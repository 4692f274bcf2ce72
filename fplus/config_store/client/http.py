"""The Config Store HTTP client: ConfigDB entries, objects, classes and the auth subset."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from fplus.jsontypes import JsonObject, JsonValue, json_object, strings

from ..uuids import App
from ._auth_api import AuthApi
from ._paths import conditions as _conditions
from ._paths import entry_path, search_params, seg
from ._transport import (
    MERGE_PATCH,
    Credentials,
    Send,
    Transport,
    json_objects,
    parse_body,
    strip_etag,
)
from .batch import BatchOp, BatchResult
from .errors import (
    ConfigStoreError,
    ConnectionFailed,
    NotFound,
    PreconditionFailed,
    Unauthorized,
    error_for,
)

DEFAULT_URL = "http://127.0.0.1:8701"

T = TypeVar("T")


class ConfigStoreClient(AuthApi):
    """A thread-safe client for one Config Store.

    Authenticates with a Bearer token from ``POST /token`` (HTTP Basic), cached until
    60 s before expiry and refetched once on a 401. Connection errors and 5xx answers
    are retried with jittered exponential back-off; 4xx answers raise the matching
    :class:`~config_store.client.errors.ConfigStoreError` subclass at once.

    ``send`` replaces the HTTP exchange itself (see :data:`~config_store.client.Send`), e.g.
    a :class:`~config_store.client.MockTransport` to test code without a server; auth,
    retries and error mapping work the same over it.

    ``credentials`` (instead of ``username``/``password``) is called for ``(username,
    password)`` at every token fetch, so credentials that change (a rotated password in a
    mounted file) are picked up at the next fetch, which a 401 triggers. If it raises, the
    request fails with :class:`~config_store.client.errors.Unauthorized`.

    ``token`` is a Bearer token to use as it is (a saved session): never refreshed, so a
    401 once the server has dropped it is final.

    ``login_refused`` is called with the :class:`~config_store.client.errors.Unauthorized`
    of every ``POST /token`` the Config Store refuses (a service says so in its log).
    """

    def __init__(
        self,
        base_url: str,
        username: str | None = None,
        password: str | None = None,
        *,
        timeout: float = 10.0,
        retries: int = 5,
        backoff: float = 0.2,
        send: Send | None = None,
        credentials: Credentials | None = None,
        token: str | None = None,
        login_refused: Callable[[Unauthorized], None] | None = None,
    ) -> None:
        if sum(x is not None for x in (credentials, username, token)) > 1:
            raise ValueError("give one of username/password, credentials or token")
        self._t = Transport(
            base_url, username, password, timeout=timeout, retries=retries, backoff=backoff,
            send=send, credentials=credentials, token=token, login_refused=login_refused,
        )

    def __repr__(self) -> str:
        return f"ConfigStoreClient({self._t.base_url!r})"

    @property
    def base_url(self) -> str:
        """The service's base URL (no trailing slash)."""
        return self._t.base_url

    def token(self) -> str:
        """A valid Bearer token, fetched or refreshed as needed."""
        return self._t.token()

    def invalidate_token(self) -> None:
        """Forget the cached token so the next request fetches a new one."""
        self._t.tokens.invalidate()

    def close(self) -> None:
        """Release pooled connections."""
        self._t.close()

    def __enter__(self) -> ConfigStoreClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def service_url(self, service: str) -> str | None:
        """Where ``service`` (a service-function UUID) is reached, asked of the Directory
        (``GET /v1/service/<uuid>``); None when nobody provides it."""
        records = json_objects(self._t.call_or_none("GET", f"/v1/service/{seg(service)}"))
        urls = [url for r in records if isinstance(url := r.get("url"), str)]
        return urls[0] if urls else None

    def advertise_service(self, service: str, url: str) -> None:
        """Say in the Directory that ``service`` is reached at ``url`` (the Service URL
        entry of the service's object; the principal needs WriteApp on that entry)."""
        self.put_config(App.ServiceUrl, service, {"url": url.rstrip("/")})

    def ping(self) -> JsonObject:
        """``GET /ping`` (unauthenticated)."""
        return json_object(self._t.call("GET", "/ping", auth=False))

    def connect(self, wait: float = 5.0) -> None:
        """Wait up to ``wait`` seconds for the Config Store to answer, then log in.

        Probes quietly (no retry log lines) every quarter second. Raises
        :class:`ConnectionFailed` if it never answers, :class:`Unauthorized` for wrong
        credentials: what a service checks once at start-up.
        """
        deadline = time.monotonic() + wait
        with ConfigStoreClient(self.base_url, retries=0, timeout=2.0) as probe:
            while True:
                try:
                    probe.ping()
                    break
                except ConnectionFailed:
                    if time.monotonic() >= deadline:
                        raise
                    time.sleep(0.25)
        if self._t.has_credentials:
            self.token()

    # -- batches ---------------------------------------------------------------

    def batch(self, ops: Sequence[BatchOp]) -> list[BatchResult]:
        """Run ``ops`` (built with :mod:`fplus.config_store.client.batch`) in order in one
        transaction (``POST /v2/batch``); their results, in order.

        If one fails, nothing is written and the error its single call would raise is
        raised (``PreconditionFailed``, ``NotFound``, ...), its ``index`` naming it and its
        ``body`` that operation's answer. A batch refused as a whole (a malformed operation,
        too many) raises with ``index`` None.
        """
        if not ops:
            return []
        try:
            answer = self._t.call("POST", "/v2/batch",
                                  body={"operations": [op.wire() for op in ops]})
        except ConfigStoreError as exc:
            raise _failed_operation(exc, ops) from None
        results = answer.get("results") if isinstance(answer, dict) else None
        if not isinstance(results, list) or len(results) != len(ops):
            raise ConfigStoreError(200, answer, "POST /v2/batch: answer carries no results")
        return [BatchResult.parse(r) for r in results]

    # -- config entries -------------------------------------------------------

    def get_config(self, app: str, obj: str) -> JsonValue:
        """The entry of ``app`` for ``obj``, or None if absent."""
        return self._t.call_or_none("GET", entry_path(app, obj))

    def get_config_with_etag(self, app: str, obj: str) -> tuple[JsonValue, str | None]:
        """``(value, etag)`` of an entry; ``(None, None)`` if absent."""
        try:
            resp = self._t.request("GET", entry_path(app, obj))
        except NotFound:
            return None, None
        return parse_body(resp), strip_etag(resp.headers.get("ETag"))

    def put_config(
        self,
        app: str,
        obj: str,
        value: object,
        *,
        if_match: str | None = None,
        if_none_match: str | None = None,
    ) -> str | None:
        """Create or replace an entry; return its new etag if the server sent one."""
        resp = self._t.request(
            "PUT", entry_path(app, obj), body=value,
            headers=_conditions(if_match, if_none_match),
        )
        return strip_etag(resp.headers.get("ETag"))

    def put_config_as(self, authorization: str, app: str, obj: str, value: object) -> None:
        """Create or replace an entry as the caller whose ``Authorization`` header is given
        (forwarded as is, never kept): the Config Store checks the caller's own grants, not
        this client's."""
        self._t.request("PUT", entry_path(app, obj), body=value, auth=False,
                        headers={"Authorization": authorization})

    def patch_config(
        self, app: str, obj: str, patch: object, *, if_match: str | None = None
    ) -> str | None:
        """Apply a JSON merge patch; a ``None`` patch deletes the entry."""
        if patch is None:
            self.delete_config(app, obj, if_match=if_match)
            return None
        resp = self._t.request(
            "PATCH", entry_path(app, obj), body=patch, content_type=MERGE_PATCH,
            headers=_conditions(if_match),
        )
        return strip_etag(resp.headers.get("ETag"))

    def delete_config(self, app: str, obj: str, *, if_match: str | None = None) -> None:
        """Delete an entry; already absent is fine unless ``if_match`` is given."""
        try:
            self._t.request("DELETE", entry_path(app, obj), headers=_conditions(if_match))
        except NotFound:
            if if_match is not None:
                raise

    def list_app_objects(self, app: str) -> list[str]:
        """Objects having an entry for ``app``."""
        return strings(self._t.call("GET", f"/v2/app/{seg(app)}/object"))

    def list_app_class(self, app: str, klass: str) -> list[str]:
        """Members of ``klass`` having an entry for ``app``."""
        return strings(self._t.call("GET", f"/v2/app/{seg(app)}/class/{seg(klass)}"))

    def search(
        self,
        app: str,
        query: Mapping[str, object],
        select: Mapping[str, str] | None = None,
        klass: str | None = None,
    ) -> Any:  # its shape depends on ``select``: callers narrow it
        """Search ``app``'s entries: ``query`` maps paths to required values (None: absent).

        Without ``select`` the answer is a list of object uuids; with it a dict of
        ``uuid → {name: value at path}``.
        """
        where = f"/class/{seg(klass)}" if klass is not None else ""
        return self._t.call(
            "GET", f"/v1/app/{seg(app)}{where}/search", params=search_params(query, select)
        )

    def set_name(self, obj: str, name: str) -> None:
        """Set ``name`` in the object's Info entry, creating the entry if needed."""
        try:
            self.patch_config(App.Info, obj, {"name": name})
            return
        except NotFound:
            pass
        try:
            self.put_config(App.Info, obj, {"name": name}, if_none_match="*")
        except PreconditionFailed:
            self.patch_config(App.Info, obj, {"name": name})

    def load_dump(self, dump: Mapping[str, object]) -> None:
        """Load a ConfigDB dump (``POST /load``)."""
        self._t.call("POST", "/load", body=dict(dump))

    def export_dump(self, service: str) -> JsonObject:
        """The whole ConfigDB (``configdb``) or Auth (``auth``) as a dump ``load_dump``
        takes (``GET /v2/dump``; wildcard read grants needed)."""
        return json_object(self._t.call("GET", f"/v2/dump?service={seg(service)}"))

    # -- objects and classes --------------------------------------------------

    def create_object(
        self, klass: str, uuid: str | None = None, owner: str | None = None
    ) -> str:
        """Create (or find, when ``uuid`` exists) an object of ``klass``; return its uuid."""
        body: JsonObject = {"class": klass}
        if uuid is not None:
            body["uuid"] = uuid
        if owner is not None:
            body["owner"] = owner
        reg = self._t.call("POST", "/v2/object", body=body)
        if isinstance(reg, dict) and isinstance(made := reg.get("uuid"), str):
            return made
        raise ConfigStoreError(200, reg, "create_object: answer carries no uuid")

    def delete_object(self, obj: str) -> None:
        """Delete an object; already absent is fine."""
        self._t.call_or_none("DELETE", f"/v2/object/{seg(obj)}")

    def list_objects(self) -> list[str]:
        """Every object uuid."""
        return strings(self._t.call("GET", "/v2/object"))

    def class_members(self, klass: str) -> list[str]:
        """All (direct and indirect) members of ``klass``."""
        return strings(self._t.call("GET", f"/v2/class/{seg(klass)}/member"))

    def class_subclasses(self, klass: str) -> list[str]:
        """All (direct and indirect) subclasses of ``klass``."""
        return strings(self._t.call("GET", f"/v2/class/{seg(klass)}/subclass"))

    def add_member(self, klass: str, obj: str) -> None:
        """Make ``obj`` a direct member of ``klass``."""
        self._t.call("PUT", f"/v2/class/{seg(klass)}/direct/member/{seg(obj)}")

    def remove_member(self, klass: str, obj: str) -> None:
        """Remove ``obj`` from the direct members of ``klass``."""
        self._t.call("DELETE", f"/v2/class/{seg(klass)}/direct/member/{seg(obj)}")

    def add_subclass(self, klass: str, sub: str) -> None:
        """Make ``sub`` a direct subclass of ``klass``."""
        self._t.call("PUT", f"/v2/class/{seg(klass)}/direct/subclass/{seg(sub)}")

    def remove_subclass(self, klass: str, sub: str) -> None:
        """Remove ``sub`` from the direct subclasses of ``klass``."""
        self._t.call("DELETE", f"/v2/class/{seg(klass)}/direct/subclass/{seg(sub)}")


def _failed_operation(exc: ConfigStoreError, ops: Sequence[BatchOp]) -> ConfigStoreError:
    """The error of the operation a failed batch names (``exc`` as it is otherwise)."""
    body = exc.body
    if not isinstance(body, dict):
        return exc
    index = body.get("failed")
    if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < len(ops):
        return exc
    results = body.get("results")
    found = results[index] if isinstance(results, list) and len(results) > index else None
    answer = found.get("body") if isinstance(found, dict) else None
    op = ops[index]
    error = error_for(exc.status, answer if answer is not None else body,
                      f"POST /v2/batch operation {index} ({op.method} {op.path})")
    error.index = index
    return error


def client_from_env(base_url: str | None = None) -> ConfigStoreClient:
    """A client configured from ``CONFIG_STORE_URL``, ``FPLUS_USER`` and ``FPLUS_PASSWORD``.

    The password falls back to ``FPLUS_ADMIN_PASSWORD``; the user defaults to ``admin``
    and the URL to ``http://127.0.0.1:8701``.
    """
    url = base_url or os.environ.get("CONFIG_STORE_URL") or DEFAULT_URL
    user = os.environ.get("FPLUS_USER") or "admin"
    password = os.environ.get("FPLUS_PASSWORD") or os.environ.get("FPLUS_ADMIN_PASSWORD")
    return ConfigStoreClient(url, user, password)


def as_admin(base_url: str, work: Callable[[ConfigStoreClient], T]) -> T:
    """``work(client)`` with a client of :func:`client_from_env` (the administrator), once
    the Config Store answers (waiting up to 5 s); a service's ``seed`` step runs this way."""
    with client_from_env(base_url) as admin:
        admin.connect(wait=5.0)
        return work(admin)

