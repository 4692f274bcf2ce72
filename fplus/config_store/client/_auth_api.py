"""The auth subset of the client: principals, identities, grants and ACLs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from fplus.jsontypes import JsonObject, JsonValue, json_object, strings

from ._paths import identity_path, password_path, seg
from ._transport import Transport, json_objects
from .errors import ConfigStoreError, Unauthorized


def uuid_of(body: JsonValue, what: str) -> str:
    """The ``uuid`` of a creation answer (a JSON object, or a bare JSON string)."""
    if isinstance(body, dict) and isinstance(uuid := body.get("uuid"), str):
        return uuid
    if isinstance(body, str):
        return body
    raise ConfigStoreError(200, body, f"{what}: answer carries no uuid")


def principal_body(name: str, password: str | None = None, uuid: str | None = None,
                   klass: str | None = None, *, label: str | None = None,
                   groups: list[str] | None = None,
                   grants: Sequence[Mapping[str, object]] | None = None) -> dict[str, object]:
    """The ``POST /v2/principal`` body of :meth:`AuthApi.create_principal`."""
    body: dict[str, object] = {"name": name}
    if password is not None:
        body["password"] = password
    if uuid is not None:
        body["uuid"] = uuid
    if klass is not None:
        body["class"] = klass
    if label is not None:
        body["label"] = label
    if groups:
        body["groups"] = list(groups)
    if grants:
        body["grants"] = [{"plural": False, **g} for g in grants]
    return body


class AuthApi:
    """Methods for the auth endpoints; mixed into :class:`ConfigStoreClient`."""

    _t: Transport

    def whoami(self) -> JsonObject:
        """``{"uuid", "name", "root"}`` of the authenticated principal."""
        return json_object(self._t.call("GET", "/v2/whoami?detail=true"))

    def identify(self, authorization: str) -> JsonObject | None:
        """Who a caller's ``Authorization`` header proves: ``{"uuid", "name", "root"}``.

        None when it proves nobody. For services that accept Config Store credentials
        (Basic or Bearer) on their own routes: the header is forwarded as is, never logged.
        ``root`` marks the root principal, which every permission check allows.
        """
        try:
            return json_object(self._t.call("GET", "/v2/whoami?detail=true", auth=False,
                                            headers={"Authorization": authorization}))
        except Unauthorized:
            return None

    def end_token(self, authorization: str) -> None:
        """End the Bearer token of a caller's ``Authorization`` header (``DELETE /token``,
        a sign-out); a token already ended is not an error."""
        try:
            self._t.call("DELETE", "/token", auth=False,
                         headers={"Authorization": authorization})
        except Unauthorized:
            return

    def create_principal(
        self,
        name: str,
        password: str | None = None,
        uuid: str | None = None,
        klass: str | None = None,
        *,
        label: str | None = None,
        groups: list[str] | None = None,
        grants: Sequence[Mapping[str, object]] | None = None,
    ) -> str:
        """Create a principal (optionally with a password, uuid and class); return its uuid.

        Extension, in the same request: ``label`` (its Info name), ``groups`` (classes it
        becomes a direct member of) and ``grants`` (``{permission, target, plural?,
        object?}``); each needs the permission its own route would, and all are idempotent.
        """
        body = principal_body(name, password, uuid, klass, label=label, groups=groups,
                              grants=grants)
        return uuid_of(self._t.call("POST", "/v2/principal", body=body), "create_principal")

    def set_password(self, principal: str, password: str) -> None:
        """Set a principal's password."""
        self._t.call("PUT", f"/v2/principal/{seg(principal)}/password", body=password)

    def generate_password(self, principal: str, *,
                          previous_valid_for: float | None = None) -> str:
        """Give a principal a new server-generated password and return it (shown once).

        By default the old password, and the principal's tokens, stop working at once. With
        ``previous_valid_for`` (seconds, 0 to 86400; an extension) the old password stays
        valid until then or until the new one is first used to log in, whichever is first,
        and tokens already issued stay valid: a running client is not cut off.
        """
        path = password_path(principal)
        if previous_valid_for is None:
            body = self._t.call("POST", path)
        else:
            body = self._t.call("POST", path, body={"previousValidFor": previous_valid_for})
        if not isinstance(body, dict) or not isinstance(password := body.get("password"), str):
            raise ConfigStoreError(0, "generate_password: no password in the answer")
        return password

    def delete_principal(self, principal: str) -> None:
        """Delete a principal; already absent is fine."""
        self._t.call_or_none("DELETE", f"/v2/principal/{seg(principal)}")

    def find_principal(self, name: str) -> str | None:
        """The uuid of the principal with Kerberos name ``name`` (``name@REALM``) or login
        name ``name``, or None."""
        found = self._t.call_or_none("GET", identity_path(name))
        return found if isinstance(found, str) else None

    def add_grant(
        self,
        principal: str,
        permission: str,
        target: str,
        plural: bool = False,
        object: str | None = None,
    ) -> str:
        """Create a grant; return its uuid."""
        body: JsonObject = {
            "principal": principal,
            "permission": permission,
            "target": target,
            "plural": plural,
        }
        if object is not None:
            body["object"] = object
        return uuid_of(self._t.call("POST", "/v2/grant", body=body), "add_grant")

    def find_grants(
        self,
        principal: str | None = None,
        permission: str | None = None,
        target: str | None = None,
        plural: bool | None = None,
        object: str | None = None,
    ) -> list[str]:
        """Uuids of grants matching every given field (None fields match anything)."""
        fields = {
            "principal": principal,
            "permission": permission,
            "target": target,
            "plural": plural,
            "object": object,
        }
        body = {k: v for k, v in fields.items() if v is not None}
        return strings(self._t.call("POST", "/v2/grant/find", body=body))

    def get_grant(self, uuid: str) -> JsonObject:
        """A grant's ``{"principal", "permission", "target", "plural", ...}``."""
        return json_object(self._t.call("GET", f"/v2/grant/{seg(uuid)}"))

    def delete_grant(self, uuid: str) -> None:
        """Delete a grant; already absent is fine."""
        self._t.call_or_none("DELETE", f"/v2/grant/{seg(uuid)}")

    def get_acl(self, principal: str) -> list[JsonObject]:
        """The principal's effective ``[{"permission", "target"}, ...]``."""
        return json_objects(self._t.call("GET", f"/v2/acl/{seg(principal)}"))
