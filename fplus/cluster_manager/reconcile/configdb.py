"""What the reconcile wing needs of the Config Store: a protocol, met by ``ConfigStoreClient``.

Taking this protocol instead of the concrete client lets the reconcile rules run against an
in-memory fake in unit tests (milliseconds, no process), while the service passes the real
HTTP client.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from fplus.config_store.client import BatchOp, BatchResult
from fplus.jsontypes import JsonObject, JsonValue


class ConfigDB(Protocol):
    """The Config Store operations commissioning and decommissioning use."""

    def batch(self, ops: Sequence[BatchOp]) -> list[BatchResult]:
        """Run ``ops`` in order in one transaction (``POST /v2/batch``): all or nothing."""

    def get_config(self, app: str, obj: str) -> JsonValue:
        """The entry, or None if absent."""

    def get_config_with_etag(self, app: str, obj: str) -> tuple[JsonValue, str | None]:
        """``(entry, etag)``; ``(None, None)`` if absent."""

    def put_config(self, app: str, obj: str, value: object) -> str | None:
        """Create or replace an entry."""

    def patch_config(self, app: str, obj: str, patch: object) -> str | None:
        """Merge-patch an entry (a None patch deletes it)."""

    def delete_config(self, app: str, obj: str) -> None:
        """Delete an entry (absent is fine)."""

    def search(self, app: str, query: Mapping[str, object]) -> list[str] | None:
        """Objects whose ``app`` entry holds every value of ``query`` (by path)."""

    def list_app_objects(self, app: str) -> list[str]:
        """Objects with an entry of ``app``."""

    def class_members(self, klass: str) -> list[str]:
        """Direct and indirect members of ``klass``."""

    def add_member(self, klass: str, obj: str) -> None:
        """Make ``obj`` a direct member of ``klass``."""

    def remove_member(self, klass: str, obj: str) -> None:
        """Remove ``obj`` from ``klass``'s direct members."""

    def delete_object(self, obj: str) -> None:
        """Delete an object with its entries and memberships."""

    def create_principal(self, name: str, password: str | None = None,
                         uuid: str | None = None, klass: str | None = None, *,
                         label: str | None = None, groups: list[str] | None = None,
                         grants: list[dict[str, object]] | None = None) -> str:
        """Create (or find by name) a principal with its label, groups and grants."""

    def delete_principal(self, principal: str) -> None:
        """Drop a principal's credentials and grants (absent is fine)."""

    def find_principal(self, name: str) -> str | None:
        """The principal with that name, or None."""

    def find_grants(self, principal: str | None = None, permission: str | None = None,
                    target: str | None = None, plural: bool | None = None,
                    object: str | None = None) -> list[str]:
        """Uuids of the grants matching every given field."""

    def get_grant(self, uuid: str) -> JsonObject:
        """One grant."""
