"""Name claims against a holder that releases the name between two attempts."""

from __future__ import annotations

from typing import Any

from fplus.cluster_manager.model.name_claims import NameClaims, claim_object
from fplus.config_store.client import PreconditionFailed

OURS = "11111111-1111-4111-8111-111111111111"
THEIRS = "22222222-2222-4222-8222-222222222222"


class ReleasedMeanwhile:
    """A claim entry held by another cluster, which deletes it as soon as it is read."""

    def __init__(self) -> None:
        self.entries: dict[str, Any] = {claim_object("line-1"): {"cluster": THEIRS}}
        self.read_once = False

    def create_object(self, klass: str, uuid: str | None = None,
                      owner: str | None = None) -> str:
        return uuid or ""

    def get_config_with_etag(self, app: str, obj: str) -> tuple[Any | None, str | None]:
        if not self.read_once:  # the holder releases right after this attempt failed
            self.read_once = True
            self.entries.pop(obj, None)
        return (self.entries[obj], "etag") if obj in self.entries else (None, None)

    def put_config(self, app: str, obj: str, value: Any, *, if_match: str | None = None,
                   if_none_match: str | None = None) -> str | None:
        if if_none_match == "*" and obj in self.entries:
            raise PreconditionFailed(412, None, "taken")
        self.entries[obj] = value
        return "etag"

    def delete_config(self, app: str, obj: str, *, if_match: str | None = None) -> None:
        self.entries.pop(obj, None)

    def search(self, app: str, query: dict[str, Any]) -> Any:
        return {}


def test_a_claim_after_the_holder_released_writes_the_claimants_entry() -> None:
    store = ReleasedMeanwhile()
    claims = NameClaims(store)
    assert claims.claim("line-1", OURS) is None
    # The retry writes our claim, not what the failed attempt read (nothing: a null entry
    # that would leave the name to anyone).
    assert store.entries[claim_object("line-1")] == {"cluster": OURS, "name": "line-1"}
    assert claims.holder("line-1") == OURS
