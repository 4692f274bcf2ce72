"""Shared helpers for the ACL and principal tests: a reusable logged-in user and probes."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from fplus.config_store import uuids
from harness.servers import ADMIN_PASSWORD, Api, ConfigStoreProcess
from tests.conftest import grant, make_user

MERGE_PATCH = {"Content-Type": "application/merge-patch+json"}


def bearer(base: str, token: str) -> Api:
    """A session that sends ``Authorization: Bearer <token>``."""
    api = Api(base)
    api.headers["Authorization"] = f"Bearer {token}"
    return api


def raw_auth(base: str, header: str) -> Api:
    """A session that sends a literal ``Authorization`` header."""
    api = Api(base)
    api.headers["Authorization"] = header
    return api


def unique(prefix: str = "p") -> str:
    """A fresh name."""
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def make_principal(admin: Api, name: str | None = None) -> tuple[str, str]:
    """A principal without a password (cheap); returns ``(uuid, name)``."""
    name = name or unique()
    r = admin.post("/v2/principal", json={"name": name})
    assert r.status_code == 201, r.text
    return r.json()["uuid"], name


def add_member(admin: Api, klass: str, obj: str) -> None:
    """Make ``obj`` a direct member of ``klass`` (as the root principal)."""
    r = admin.put(f"/v2/class/{klass}/direct/member/{obj}")
    assert r.status_code == 204, r.text


def direct_members(admin: Api, klass: str) -> list[str]:
    """The direct members of ``klass`` (read as the root principal)."""
    r = admin.get(f"/v2/class/{klass}/direct/member")
    assert r.status_code == 200, r.text
    return r.json()


def exists(admin: Api, obj: str) -> bool:
    """Does ``obj`` have a Registration entry?"""
    r = admin.get(f"/v2/app/{uuids.App.Registration}/object/{obj}")
    assert r.status_code in (200, 404), r.text
    return r.status_code == 200


def set_owner(admin: Api, obj: str, owner: str) -> None:
    """Give ``obj`` to ``owner`` by patching its Registration entry."""
    r = admin.patch(f"/v2/app/{uuids.App.Registration}/object/{obj}",
                    data=json.dumps({"owner": owner}), headers=MERGE_PATCH)
    assert r.status_code == 204, r.text


def grants_of(admin: Api, principal: str) -> list[str]:
    """Uuids of the grants naming ``principal``."""
    r = admin.post("/v2/grant/find", json={"principal": principal})
    assert r.status_code == 200, r.text
    return r.json()


@dataclass
class Actor:
    """A logged-in user whose grants and memberships are undone after each test."""

    uuid: str
    name: str
    password: str
    admin: Api
    token: str = ""
    _undo: list[Callable[[], object]] = field(default_factory=list)

    @property
    def base(self) -> str:
        return self.admin.base

    def basic(self) -> Api:
        """A session using Basic auth."""
        return Api(self.base, (self.name, self.password))

    def bearer(self) -> Api:
        """A session using the actor's Bearer token."""
        return bearer(self.base, self.token)

    def grant(self, permission: str, target: str, plural: bool = False,
              obj: str | None = None, principal: str | None = None) -> str:
        """Grant ``permission`` on ``target`` to the actor (or ``principal``)."""
        g = grant(self.admin, principal or self.uuid, permission, target, plural, obj)
        self._undo.append(lambda: self.admin.delete(f"/v2/grant/{g}"))
        return g

    def allow(self, perms: tuple[str, ...], target: str, plural: bool = False,
              obj: str | None = None, principal: str | None = None) -> Api:
        """Grant every one of ``perms``; returns a Basic session."""
        for perm in perms:
            self.grant(perm, target, plural, obj, principal)
        return self.basic()

    def join(self, klass: str) -> None:
        """Make the actor a direct member of ``klass``."""
        add_member(self.admin, klass, self.uuid)
        self._undo.append(
            lambda: self.admin.delete(f"/v2/class/{klass}/direct/member/{self.uuid}"))

    def cleanup(self) -> None:
        """Undo this test's grants and memberships; the actor ends up with none."""
        while self._undo:
            self._undo.pop()()
        for left in grants_of(self.admin, self.uuid):
            self.admin.delete(f"/v2/grant/{left}")


def new_actor(config_store: ConfigStoreProcess) -> Actor:
    """Create a user with a Basic password and a Bearer token."""
    admin = Api(config_store.url, ("admin", ADMIN_PASSWORD))
    user, api = make_user(admin)
    assert api.auth is not None
    r = api.post("/token")
    assert r.status_code == 200, r.text
    return Actor(user, api.auth[0], api.auth[1], admin, r.json()["token"])
