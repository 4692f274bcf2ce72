"""notify/v2 WATCHes of the Auth routes (acs-auth lib/notify.js): ``v2/principal/``,
``v2/identity/:kind/``, ``v2/acl/:principal`` and ``v2/acl/kerberos/:upn``.

Each update is what the route answers the session's principal (a refusal as its status:
403, 404), recomputed whenever a grant, principal, identity or class relation changes, so
the ACL checks apply per update; an unchanged answer is not sent again.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from ... import uuids
from ..auth import grants, identities
from ..common.errors import DomainError
from ..common.events import AUTH, STRUCTURE, AuthChanged, ConfigChanged, Event, StructureChanged
from .base import Session, Sub

_U = r"([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})"
PRINCIPALS = re.compile(r"^v2/principal/$")
IDENTITY_KIND = re.compile(r"^v2/identity/([a-z]+)/$")
ACL = re.compile(rf"^v2/acl/{_U}/?$")
ACL_BY_NAME = re.compile(r"^v2/acl/kerberos/([^/]+)$")

Answer = Callable[[str], Any]
"""The route's answer for a caller (raising a :class:`DomainError` to refuse)."""


class AuthWatch(Sub):
    """A watch of one Auth route's answer."""

    def __init__(self, session: Session, uuid: str, answer: Answer,
                 owners_matter: bool) -> None:
        super().__init__(session, uuid)
        self.answer = answer
        self.owners_matter = owners_matter
        """ACLs also depend on who owns what (grants on the Mine target)."""

    @property
    def interests(self) -> tuple[str, ...]:
        mine = (uuids.App.Registration,) if self.owners_matter else ()
        return (AUTH, STRUCTURE, *mine)

    def _response(self) -> dict[str, Any]:
        try:
            return {"status": 200, "body": self.answer(self.session.principal)}
        except DomainError as exc:
            return {"status": exc.status}

    def initial(self) -> list[dict]:
        return [{"response": self._response()}]

    def on_events(self, events: Sequence[Event]) -> list[dict]:
        touched = any(isinstance(e, AuthChanged | StructureChanged) or (
            self.owners_matter and isinstance(e, ConfigChanged)
            and e.app == uuids.App.Registration) for e in events)
        return [{"response": self._response()}] if touched else []


def auth_watch(session: Session, sub_uuid: str, url: str) -> AuthWatch | None:
    """The Auth watch ``url`` names, or None if it names none."""
    core = session.store.core
    if PRINCIPALS.match(url):
        return AuthWatch(session, sub_uuid,
                         lambda who: identities.principal_uuids(core, who), False)
    if m := IDENTITY_KIND.match(url):
        kind = m[1]
        return AuthWatch(session, sub_uuid, lambda who: identities.names(core, who, kind),
                         False)
    if m := ACL.match(url):
        principal = m[1].lower()
        return AuthWatch(session, sub_uuid,
                         lambda who: grants.readable_acl(core, who, principal), True)
    if m := ACL_BY_NAME.match(url):
        upn = m[1]
        return AuthWatch(session, sub_uuid,
                         lambda who: identities.acl_of_name(core, who, upn), True)
    return None
