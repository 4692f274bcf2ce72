"""Cluster names, claimed atomically in the Config Store: one owner per name, whoever asks.

A name's claim is the entry ``{"cluster": <uuid>}`` of the Edge cluster name claim app on the
object ``uuid5(NAMESPACE, name)`` (class Edge cluster name). It is written with
``If-None-Match: *``, so of any number of concurrent claimants — the cluster API creating a
cluster, the reconciler commissioning an entry written directly, in any process — exactly
one wins; the others read the winner. Principal names, Sparkplug group ids and Git paths all
derive from the cluster name, so a claimed name keeps each of them to one cluster. A claim
is released only by its holder (``If-Match`` on the entry it read). The claim and its read
are also offered as batch operations (:func:`claim_ops`, :func:`read_op`), so a claim can be
written in one transaction with what it guards.
"""

from __future__ import annotations

import contextlib
import uuid as uuidlib
from collections.abc import Mapping
from dataclasses import replace
from typing import Protocol

from fplus.config_store import uuids
from fplus.config_store.client import BatchOp, BatchResult, NotFound, PreconditionFailed, batch
from fplus.jsontypes import JsonValue, is_object, text

NAMESPACE = uuidlib.UUID("5b1d8f3e-4c3a-4a57-9a36-0f2d6c1e9b41")
"""Namespace of the claim objects' UUIDs (version 5, from the name)."""
APP = uuids.App.EdgeClusterNameClaim
CLASS = uuids.Class.EdgeClusterName


class ClaimStore(Protocol):
    """The Config Store operations claims use (met by ``ConfigStoreClient``)."""

    def create_object(self, klass: str, uuid: str | None = None,
                      owner: str | None = None) -> str:
        """Create (or find) an object."""

    def get_config_with_etag(self, app: str, obj: str) -> tuple[JsonValue, str | None]:
        """An entry and its etag."""

    def put_config(self, app: str, obj: str, value: object, *, if_match: str | None = None,
                   if_none_match: str | None = None) -> str | None:
        """Write an entry, conditionally."""

    def delete_config(self, app: str, obj: str, *, if_match: str | None = None) -> None:
        """Delete an entry, conditionally."""

    def search(self, app: str, query: Mapping[str, object]) -> list[str] | None:
        """The objects whose entries match ``query``."""


def claim_object(name: str) -> str:
    """The object whose entry claims ``name``."""
    return str(uuidlib.uuid5(NAMESPACE, name))


def _claim(name: str, cluster: str, creator: str | None) -> dict[str, str]:
    """The claim entry."""
    return {"cluster": cluster, "name": name} | ({"creator": creator} if creator else {})


def read_op(name: str) -> BatchOp:
    """A batch operation reading ``name``'s claim (see :func:`holder_in`)."""
    return batch.get_config(APP, claim_object(name))


def holder_in(result: BatchResult) -> str | None:
    """The cluster holding the name, from the result of :func:`read_op` (None: free)."""
    return _cluster(result.body) if result.status == 200 else None


def release_op(name: str, etag: str) -> BatchOp:
    """A batch operation releasing ``name``'s claim as read with ``etag``; changed or gone
    meanwhile (412, 404), it is no longer the reader's to release and stays."""
    return replace(batch.delete_config(APP, claim_object(name), if_match=etag),
                   accept=(404, 412))


def claim_ops(name: str, cluster: str) -> tuple[BatchOp, BatchOp]:
    """Batch operations claiming a free ``name`` for ``cluster``: its claim object (found if
    it exists), then the claim, refused (412, so the whole batch) if the name is held."""
    obj = claim_object(name)
    return (batch.create_object(CLASS, obj),
            batch.put_config(APP, obj, _claim(name, cluster, None), if_none_match="*"))


class NameClaims:
    """Claim, look up and release cluster names."""

    def __init__(self, cs: ClaimStore) -> None:
        self.cs = cs

    def holder(self, name: str) -> str | None:
        """The cluster holding ``name``, or None."""
        entry, _ = self.cs.get_config_with_etag(APP, claim_object(name))
        return _cluster(entry)

    def claim(self, name: str, cluster: str, *, fresh: bool = False,
              creator: str | None = None) -> str | None:
        """Claim ``name`` for ``cluster``; None when it holds the name (now or already),
        else the cluster that holds it. ``fresh``: the name was probably never claimed (a
        new cluster), so its claim object is created first instead of after a 404.
        ``creator``: the principal creating the cluster, recorded in the claim."""
        obj = claim_object(name)
        entry = _claim(name, cluster, creator)
        if fresh:
            self.cs.create_object(CLASS, obj)
        for _ in range(3):  # a holder releasing meanwhile lets the next attempt win
            try:
                self.cs.put_config(APP, obj, entry, if_none_match="*")
                return None
            except NotFound:  # the claim object does not exist yet
                self.cs.create_object(CLASS, obj)
                continue
            except PreconditionFailed:
                pass
            held = _cluster(self.cs.get_config_with_etag(APP, obj)[0])
            if held is not None:
                return None if held == cluster else held
        raise RuntimeError(f"the claim on cluster name {name!r} keeps changing")

    def created_by(self, principal: str) -> int:
        """How many names (so clusters) ``principal`` holds through clusters it created."""
        return len(self.cs.search(APP, {"creator": principal}) or [])

    def release(self, name: str, cluster: str) -> None:
        """Give up ``name`` if ``cluster`` holds it (anyone else's claim stays)."""
        obj = claim_object(name)
        entry, etag = self.cs.get_config_with_etag(APP, obj)
        if _cluster(entry) != cluster or etag is None:
            return
        # changed or gone meanwhile: no longer ours to release
        with contextlib.suppress(PreconditionFailed, NotFound):
            self.cs.delete_config(APP, obj, if_match=etag)


def _cluster(entry: object) -> str | None:
    return text(entry, "cluster") if is_object(entry) else None
