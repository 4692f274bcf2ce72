"""Who is calling, and what may they do: answered by the Config Store, cached briefly.

For services that authenticate their own callers against the Config Store (the Git
server, the Cluster Manager). Credentials (Basic or a Config Store Bearer token) are
verified by forwarding the ``Authorization`` header to the Config Store; a principal's
ACL is read with the service's own credentials. Both answers are cached for a few
seconds, so a revoked grant stops working within ``ttl`` seconds and a busy client does
not hit the store for every request.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .. import uuids
from .http import ConfigStoreClient

DEFAULT_TTL = 5.0


class TTLCache:
    """Values remembered for ``ttl`` seconds after they were computed; a computation that
    raises is not remembered. Expired items are dropped once ``max_items`` are held."""

    def __init__(self, ttl: float, *, max_items: int = 10_000,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl, self.max_items, self._clock = ttl, max_items, clock
        self._lock = threading.Lock()
        self._items: dict[str, tuple[float, Any]] = {}
        self._computing: dict[str, object] = {}
        """The latest computation under way per key; :meth:`forget` drops it, so a value
        computed from before what made the caller forget is not remembered."""

    def get(self, key: str, compute: Callable[[], Any], *, fresh: bool = False) -> Any:
        """The remembered value of ``key``, else (or if ``fresh``) ``compute()``
        (remembered unless :meth:`forget` of ``key`` was called meanwhile)."""
        now, mine = self._clock(), object()
        with self._lock:
            hit = self._items.get(key)
            if hit and hit[0] > now and not fresh:
                return hit[1]
            self._computing[key] = mine
        computed = False
        try:
            value = compute()
            computed = True
        finally:
            with self._lock:
                if self._computing.get(key) is mine:  # no forget, no later computation
                    del self._computing[key]
                    if computed:
                        if len(self._items) >= self.max_items:
                            self._items = {k: v for k, v in self._items.items() if v[0] > now}
                        self._items[key] = (now + self.ttl, value)
        return value

    def forget(self, key: str) -> None:
        """Drop what is remembered of ``key``; a computation of it under way is not
        remembered either."""
        with self._lock:
            self._items.pop(key, None)
            self._computing.pop(key, None)


@dataclass(frozen=True)
class Caller:
    """An authenticated principal."""

    uuid: str
    root: bool = False
    name: str | None = None
    """The principal's name, when the Config Store said it."""


class Access:
    """Authentication and permission checks against the Config Store."""

    def __init__(self, client: ConfigStoreClient, ttl: float = DEFAULT_TTL) -> None:
        self.client = client
        self._principals = TTLCache(ttl)
        self._acls = TTLCache(ttl)

    def principal(self, authorization: str | None, *, fresh: bool = False) -> Caller | None:
        """Who an ``Authorization`` header proves, or None; ``fresh`` asks the Config Store
        now (a signed-in console page: a password change or sign-out ends it at once)."""
        if not authorization:
            return None
        found = self._principals.get(_key(authorization),
                                     lambda: self.client.identify(authorization), fresh=fresh)
        if not found:
            return None
        name = found.get("name")
        return Caller(found["uuid"], bool(found.get("root")),
                      name if isinstance(name, str) else None)

    def end_token(self, authorization: str) -> None:
        """Sign out: end the Bearer token of ``authorization`` on the Config Store and
        forget who it proved."""
        self.client.end_token(authorization)
        self._principals.forget(_key(authorization))

    def allowed(self, caller: Caller, permission: str, target: str, *, wild: bool = True) -> bool:
        """``check_acl(caller, permission, target, wild)`` (plural grants come expanded)."""
        if caller.root:
            return True
        acl = self._acls.get(caller.uuid, lambda: self.client.get_acl(caller.uuid))
        targets = (target, uuids.NULL) if wild else (target,)
        return any(e["permission"] == permission and e["target"] in targets
                   and "object" not in e for e in acl)


def _key(authorization: str) -> str:
    return hashlib.sha256(authorization.encode()).hexdigest()
