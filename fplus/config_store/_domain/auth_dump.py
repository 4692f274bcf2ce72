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
"""

from __future__ import annotations

from typing import Any

from jsonschema import Draft202012Validator

from .. import uuids
from .._storage import GrantRow
from ..uuids import UUID_PATTERN
from . import grants, identities
from .core import Core
from .errors import Forbidden, Unprocessable
from .schemas import errors_of

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
    },
})


def is_auth_dump(body: Any) -> bool:
    """Whether ``body`` claims to be an Auth dump (else it is a ConfigDB one)."""
    service = body.get("service") if isinstance(body, dict) else None
    return isinstance(service, str) and service.lower() == uuids.Service.Auth


def _lowered(value: Any) -> Any:
    """``value`` with every UUID key (any case) lower-cased, at any depth, as every other
    body here accepts UUIDs in any case."""
    if not isinstance(value, dict):
        return value
    return {(k.lower() if uuids.is_uuid(k.lower()) else k): _lowered(v)
            for k, v in value.items()}


def grants_of(dump: dict[str, Any]) -> list[GrantRow]:
    """The grants a valid dump lists, flattened as upstream's loader does."""
    out = []
    for principal, perms in dump.get("grants", {}).items():
        for permission, targets in perms.items():
            for target, plural in (targets or {uuids.NULL: False}).items():
                for each in ((True, False) if plural == "both" else (plural,)):
                    out.append(GrantRow("", principal, permission, target, each))
    return out


def load(core: Core, caller: str, dump: Any) -> None:
    """Apply an Auth dump: 422 if malformed, 403 if any record is not the caller's to
    write, 409 for an identity clash; nothing is written unless everything is."""
    if isinstance(dump, dict):
        dump = {**_lowered(dump), "service": str(dump.get("service")).lower()}
    errors = errors_of(_DUMP, dump)
    if errors:
        raise Unprocessable("invalid Auth dump: " + "; ".join(errors[:10]),
                            body={"errors": errors})
    names = {p: v["kerberos"] for p, v in dump.get("identities", {}).items() if "kerberos" in v}
    with core.transaction() as tx:
        for principal, name in names.items():
            if not core.acl.check(caller, uuids.AuthPerm.WriteKerberos, principal):
                raise Forbidden(f"permission denied: setting the identity of {principal} "
                                "needs WriteKerberos on it")
            identities.claim_kerberos(core, tx, principal, name)
        for grant in grants_of(dump):
            grants.authorise(core, caller, grant)
            grants.add_in(core, tx, grant)
