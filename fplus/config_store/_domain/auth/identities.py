"""Identities: the names a principal is known by, one per kind (Auth's identity records).

Two kinds: ``kerberos``, a Kerberos UPN stored per principal (``PUT
/v2/principal/:p/kerberos``), and ``login``, the name a principal logs in with by password:
the name it was created with, read here and never set through the identity routes. A name
names one principal per kind (a second claim is 409).

No squatting (ours): a Kerberos name ``user@REALM`` whose ``user`` is a principal's login
name (ignoring case, as names are unique) belongs to that principal. Setting it on another
principal is 409, and a lookup finds the login's principal even if another one holds the
name (stored before that login existed: a name pre-registered for a principal about to be
created neither blocks the creation nor takes its lookups). Identities are set only on
existing principals (404).

Reading identities needs ReadKerberos, as upstream (acs-auth lib/dataflow.js
``track_identities``: "ReadKrb is repurposed here as 'read any identity'"); setting or
removing one needs WriteKerberos on the principal.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from ... import uuids
from ..common.errors import Conflict, Forbidden, Gone, MethodNotAllowed, NotFound, Unprocessable
from ..core.state import Core
from ..core.tx import Tx
from . import audit, grants

KERBEROS, LOGIN = "kerberos", "login"
KINDS = (KERBEROS, LOGIN)
UPN = re.compile(r"^[a-zA-Z0-9_./-]+@[A-Za-z0-9-.]+$")
"""A Kerberos UPN as upstream accepts one (acs-auth lib/validate.js ``KRB_rx``)."""
A = uuids.AuthPerm


class Identity(NamedTuple):
    """One identity record."""

    principal: str
    kind: str
    name: str


def every(core: Core) -> list[Identity]:
    """Every identity: the stored ones and each principal's login name."""
    reader = core.reader()
    found = [Identity(*row) for row in reader.identities()]
    found += [Identity(uuid, LOGIN, name) for uuid, name in reader.principals()]
    return sorted(found)


def may_read(core: Core, caller: str, principal: str = uuids.NULL) -> bool:
    """Whether ``caller`` may read identities (of ``principal``; any: the wildcard)."""
    return core.acl.check(caller, A.ReadKerberos, principal)


def readable(core: Core, caller: str, *, principal: str | None = None,
             kind: str | None = None) -> list[Identity]:
    """The identities matching the given fields; 403 without ReadKerberos."""
    if not may_read(core, caller, principal or uuids.NULL):
        raise Forbidden("permission denied: reading identities needs ReadKerberos")
    return [i for i in every(core)
            if principal in (None, i.principal) and kind in (None, i.kind)]


def principal_uuids(core: Core, caller: str) -> list[str]:
    """The principals having an identity (``GET /v2/principal``); 403, or 404 if none."""
    return _nonempty(sorted({i.principal for i in readable(core, caller)}))


def names(core: Core, caller: str, kind: str) -> list[str]:
    """Every name of ``kind`` (``GET /v2/identity/:kind``); 403, or 404 if none."""
    return _nonempty(sorted({i.name for i in readable(core, caller, kind=kind)}))


def acl_of_name(core: Core, caller: str, upn: str) -> list[dict[str, str]]:
    """The ACL of the principal a Kerberos name names, as ``caller`` may read it; ``[]``
    for an unknown name, as upstream, and (ours) for one ``caller`` may not read."""
    found = lookup(core, KERBEROS, upn)
    if found is None or not may_read(core, caller, found):
        return []
    return grants.readable_acl(core, caller, found)


def _nonempty(found: list[str]) -> list[str]:
    """``found``, or 404: upstream answers an empty result as not found."""
    if not found:
        raise NotFound("nothing found")
    return found


def of(core: Core, principal: str) -> dict[str, str]:
    """``{kind: name, …, "uuid": principal}``: upstream's shape of a principal's identities
    (acs-auth lib/api_v2.js ``_id_get_all``); 404 when it has none."""
    mine = names_of(core, principal)
    if not mine:
        raise NotFound(f"principal {principal} has no identities")
    return {**mine, "uuid": principal}


def names_of(core: Core, principal: str) -> dict[str, str]:
    """``{kind: name}`` of a principal's identities."""
    reader = core.reader()
    found = dict(reader.identities_of(principal))
    login = reader.principal_name(principal)
    return found | ({LOGIN: login} if login is not None else {})


def lookup(core: Core, kind: str, name: str) -> str | None:
    """The principal a name of ``kind`` names, or None.

    Ours beside upstream's exact match: a Kerberos name finds first the principal whose login
    name it starts with (``edge-1@REALM`` finds the password principal ``edge-1``), so
    Factory+ clients that look principals up by UPN find ours and no other principal can
    hold that name in its place (module docstring); and a "Kerberos" name without
    ``@REALM`` (upstream: 410) is looked up as a login name, as this server always did.
    """
    if kind == LOGIN or (kind == KERBEROS and not UPN.match(name)):
        return _by_login(core, name)
    if kind != KERBEROS:
        return None
    return (_by_login(core, name) or _by_login(core, name.split("@", 1)[0])
            or core.reader().identity_holder(kind, name))


def _by_login(core: Core, name: str) -> str | None:
    found = core.reader().principal_by_name(name)
    return found[0] if found else None


def put(core: Core, caller: str, principal: str, kind: str, name: object) -> None:
    """Set ``principal``'s identity of ``kind`` to ``name`` (the same again: no change); 403,
    404 (unknown kind), 405 (``login``), 422 (not a UPN) or 409 (another principal holds it,
    or it has another name of that kind, as upstream's unique index)."""
    _may_write(core, caller, principal, kind)
    if not isinstance(name, str) or not UPN.match(name):
        raise Unprocessable("body must be a JSON string holding a Kerberos principal name "
                            "(name@REALM)")
    with core.transaction() as tx:
        if claim_kerberos(core, tx, principal, name):
            audit.record(tx, "identity.set", "principal", principal,
                         target_principal=principal,
                         detail={"kind": KERBEROS, "name": name})


def claim_kerberos(core: Core, tx: Tx, principal: str, name: str) -> bool:
    """Store ``name`` as ``principal``'s Kerberos identity within ``tx`` (the same again: no
    change: False); 404 if ``principal`` is not a principal, 409 if the name is another's
    (held, or another principal's login name) or ``principal`` has another one."""
    if not core.graph.is_member(principal, uuids.Class.Principal):
        raise NotFound(f"{principal} is not a principal")
    holder = tx.w.identity_holder(KERBEROS, name)
    if holder not in (None, principal):
        raise Conflict(f"another principal already holds the {KERBEROS} identity {name!r}")
    alike = tx.w.principals_named_alike(name.split("@", 1)[0])
    if any(uuid != principal for uuid, _ in alike):
        raise Conflict(f"the {KERBEROS} identity {name!r} belongs to the principal whose "
                       "login name it starts with")
    held = dict(tx.w.identities_of(principal)).get(KERBEROS)
    if held not in (None, name):
        raise Conflict(f"principal {principal} already has the {KERBEROS} identity {held!r}; "
                       "DELETE it first")
    if held is None:
        tx.w.put_identity(principal, KERBEROS, name)
    return held is None


def delete(core: Core, caller: str, principal: str, kind: str) -> None:
    """Remove ``principal``'s identity of ``kind`` (404 if it has none)."""
    _may_write(core, caller, principal, kind)
    with core.transaction() as tx:
        if not tx.w.delete_identity(principal, kind):
            raise NotFound(f"principal {principal} has no {kind} identity")
        audit.record(tx, "identity.remove", "principal", principal,
                     target_principal=principal, detail={"kind": kind})


def _may_write(core: Core, caller: str, principal: str, kind: str) -> None:
    if not core.acl.check(caller, A.WriteKerberos, principal):
        raise Forbidden("permission denied: setting identities needs WriteKerberos on the "
                        "principal")
    if kind == LOGIN:
        raise MethodNotAllowed("a login name is the name the principal was created with; "
                               "it is not changed through the identity routes")
    if kind not in KINDS:
        raise NotFound(f"unknown identity kind {kind!r}; known: {', '.join(KINDS)}")


def groups(core: Core, caller: str, principal: str) -> list[str]:
    """The principal groups (subclasses of Principal) ``principal`` is a member of, at any
    depth; 403 without ReadKerberos, 410 for a uuid that is not a principal (acs-auth
    lib/dataflow.js ``track_groups``)."""
    if not may_read(core, caller):
        raise Forbidden("permission denied: reading groups needs ReadKerberos")
    graph = core.graph
    if not graph.is_member(principal, uuids.Class.Principal):
        raise Gone(f"{principal} is not a principal")
    principal_groups = graph.subclasses(uuids.Class.Principal) - {uuids.Class.Principal}
    return sorted(principal_groups & graph.classes_of(principal))
