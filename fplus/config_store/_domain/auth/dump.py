"""Loading Auth dumps (``POST /load`` of a dump whose ``service`` is Auth): identities and
grants, all or nothing.

The dump format is upstream's version 2 (acs-auth dump-schema.yaml and lib/loader.js):
``identities: {principal: {kerberos: upn}}`` and ``grants: {principal: {permission: null |
{target: plural | "both"}}}``, where null means the wildcard target, not plural, and
``"both"`` a plural and a singular grant. Entirely duplicate records are ignored; a
Kerberos name another principal holds (or another principal's login name, as
:func:`.identities.claim_kerberos`), or a principal's second one, is 409.

Ours beside upstream: each grant needs what ``POST /v2/grant`` needs (WriteACL and the grant
rule) and each identity WriteKerberos on its principal, which must exist (404); a name
without ``@REALM`` is 422
(this server has no default realm to append).

Two extensions, so that an export (``GET /v2/dump?service=auth``, :func:`export`) restores
everything: ``principals: {uuid: {name, passwordHash?}}``, the password principals with their
stored hashes (never a password; tokens and a rotation's previous password are not dumped,
so none survives a restore), each needing WriteKerberos on an existing principal object;
and ``objectGrants: [{principal, permission, target, plural, object}]``, the grants limited
to one object's entries, which upstream's shape cannot say. The root principal is never
exported: a Config Store keeps its own.
"""

from __future__ import annotations

import re

from jsonschema import Draft202012Validator

from fplus.jsontypes import JsonObject, JsonValue, as_list, json_object, text

from ... import uuids
from ..._storage import GrantRow
from ...uuids import UUID_PATTERN
from ..common.errors import Conflict, Forbidden, NotFound, Unprocessable
from ..configdb.schemas import errors_of
from ..core.credentials import GENERATED_PREFIX
from ..core.state import Core
from ..core.tx import Tx
from . import grants, identities
from .principals import NAME

_UUID_KEYS = {"pattern": UUID_PATTERN}
_DUMP = Draft202012Validator({
    "type": "object",
    "required": ["service", "version"],
    "additionalProperties": False,
    "properties": {
        "service": {"const": uuids.Service.Auth},
        "version": {"const": 2},
        "identities": {"type": "object", "propertyNames": _UUID_KEYS,
                       "additionalProperties": {
                           "type": "object", "additionalProperties": False,
                           "properties": {"kerberos": {"type": "string",
                                                       "pattern": identities.UPN.pattern}}}},
        "grants": {"type": "object", "propertyNames": _UUID_KEYS,
                   "additionalProperties": {
                       "type": "object", "propertyNames": _UUID_KEYS,
                       "additionalProperties": {"oneOf": [
                           {"type": "null"},
                           {"type": "object", "propertyNames": _UUID_KEYS,
                            "additionalProperties": {"oneOf": [
                                {"type": "boolean"}, {"const": "both"}]}}]}}},
        "principals": {"type": "object", "propertyNames": _UUID_KEYS,
                       "additionalProperties": {
                           "type": "object", "required": ["name"],
                           "additionalProperties": False,
                           "properties": {"name": {"type": "string", "pattern": NAME.pattern},
                                          "passwordHash": {"type": "string", "pattern": (
                                              rf"^(\$argon2|{re.escape(GENERATED_PREFIX)})")}}}},
        "objectGrants": {"type": "array", "items": {"type": "object"}},
    },
})


def is_auth_dump(body: JsonValue) -> bool:
    """Whether ``body`` claims to be an Auth dump (else it is a ConfigDB one)."""
    service = body.get("service") if isinstance(body, dict) else None
    return isinstance(service, str) and service.lower() == uuids.Service.Auth


def _lowered(value: JsonValue) -> JsonValue:
    """``value`` with every UUID key (any case) lower-cased, at any depth, as every other
    body here accepts UUIDs in any case."""
    return _lowered_keys(value) if isinstance(value, dict) else value


def _lowered_keys(value: JsonObject) -> JsonObject:
    return {(k.lower() if uuids.is_uuid(k.lower()) else k): _lowered(v)
            for k, v in value.items()}


def grants_of(dump: JsonObject) -> list[GrantRow]:
    """The grants a valid dump lists, flattened as upstream's loader does."""
    out = []
    for principal, perms in json_object(dump.get("grants")).items():
        for permission, targets in json_object(perms).items():
            for target, plural in (json_object(targets) or {uuids.NULL: False}).items():
                for each in ((True, False) if plural == "both" else (plural is True,)):
                    out.append(GrantRow("", principal, permission, target, each))
    return out


def load(core: Core, caller: str, dump: JsonValue) -> None:
    """Apply an Auth dump: 422 if malformed, 403 if any record is not the caller's to
    write, 409 for an identity clash; nothing is written unless everything is."""
    if isinstance(dump, dict):
        dump = {**_lowered_keys(dump), "service": str(dump.get("service")).lower()}
    errors = errors_of(_DUMP, dump)
    if errors:
        raise Unprocessable("invalid Auth dump: " + "; ".join(errors[:10]),
                            body={"errors": errors})
    checked = json_object(dump)
    names = {p: name for p, v in json_object(checked.get("identities")).items()
             if (name := text(json_object(v), "kerberos")) is not None}
    limited = [grants.parse(g) for g in as_list(checked.get("objectGrants"))]
    with core.transaction() as tx:
        for principal, spec in json_object(checked.get("principals")).items():
            found = json_object(spec)
            _load_principal(core, tx, caller, principal, text(found, "name") or "",
                            text(found, "passwordHash"))
        for principal, name in names.items():
            if not core.acl.check(caller, uuids.AuthPerm.WriteKerberos, principal):
                raise Forbidden(f"permission denied: setting the identity of {principal} "
                                "needs WriteKerberos on it")
            identities.claim_kerberos(core, tx, principal, name)
        for grant in grants_of(checked) + limited:
            grants.authorise(core, caller, grant)
            grants.add_in(core, tx, grant)


def _load_principal(core: Core, tx: Tx, caller: str, uuid: str, name: str,
                    password_hash: str | None) -> None:
    """Store a dumped principal's name and password hash (403, 404, 409 as enrolment)."""
    if not core.acl.check(caller, uuids.AuthPerm.WriteKerberos, uuid):
        raise Forbidden(f"permission denied: loading principal {uuid} needs WriteKerberos "
                        "on it")
    if not core.graph.is_member(uuid, uuids.Class.Principal):
        raise NotFound(f"{uuid} is not a principal: the ConfigDB dump loads first")
    if core.acl.is_root(uuid):
        raise Conflict("the root principal is not loaded from a dump")
    if any(other != uuid for other, _ in tx.w.principals_named_alike(name)):
        raise Conflict(f"principal name {name!r} is taken by another principal")
    tx.w.put_principal(uuid, name, password_hash)


def export(core: Core) -> dict[str, object]:
    """Every principal but the root (name and stored hash), identity and grant as an Auth
    dump :func:`load` takes, read in one snapshot; nothing of the root principal, nor of a
    principal whose object is no longer a Principal (a load would refuse it)."""
    root = core.acl.root
    with core.storage.snapshot() as reader:
        principals: dict[str, dict[str, str]] = {}
        for uuid, name in sorted(reader.principals()):
            found = reader.principal_credentials(uuid)
            if uuid != root and core.graph.is_member(uuid, uuids.Class.Principal):
                principals[uuid] = {"name": name} | (
                    {"passwordHash": found.password_hash}
                    if found is not None and found.password_hash else {})
        kerberos = {p: {kind: name} for p, kind, name in reader.identities()
                    if p != root and kind == identities.KERBEROS
                    and core.graph.is_member(p, uuids.Class.Principal)}
        rows = [g for g in reader.grants() if g.principal != root]
    plain: dict[str, dict[str, dict[str, bool | str]]] = {}
    for g in sorted(rows, key=lambda g: (g.principal, g.permission, g.target, g.plural)):
        if g.object is None:
            targets = plain.setdefault(g.principal, {}).setdefault(g.permission, {})
            seen = targets.get(g.target)
            targets[g.target] = "both" if seen is not None and seen != g.plural else g.plural
    upstream = {principal: {perm: None if targets == {uuids.NULL: False} else targets
                            for perm, targets in perms.items()}  # null: the wildcard target
                for principal, perms in plain.items()}
    limited = [{k: v for k, v in grants.to_json(g).items() if k != "uuid"}
               for g in rows if g.object is not None]
    return {"service": uuids.Service.Auth, "version": 2, "principals": principals,
            "identities": kerberos, "grants": upstream, "objectGrants": limited}
