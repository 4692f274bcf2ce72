"""Secret escrow: sealed values kept centrally under envelope encryption, so they can be
sealed again when an edge's sealing key changes (new hardware, a lost key).

- :mod:`~cluster_manager.escrow.keyring` — the escrow key file (256-bit keys by id).
- :mod:`~cluster_manager.escrow.envelope` — AES-256-GCM data key per value, wrapped.
- :mod:`~cluster_manager.escrow.records` — what was sealed, by whom, when, to which key.
- :mod:`~cluster_manager.escrow.reseal` — re-sealing a cluster's secrets in one commit.

A value is never returned by any API: it only ever flows into a new seal.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from ..db import DatabaseUnavailable
from .envelope import Envelope, EnvelopeError, place, rewrap, unwrap, wrap
from .keyring import EscrowKeyError, Keyring
from .records import SCHEMA, SealedKey, SealedKeys

__all__ = ["SCHEMA", "Envelope", "EnvelopeError", "Escrow", "EscrowKeyError", "Keyring",
           "SealedKey", "SealedKeys", "place", "rewrap", "unwrap", "wrap"]


@dataclass(frozen=True)
class Escrow:
    """The records of sealed keys, and the keyring when escrow is on (None: write-only)."""

    records: SealedKeys
    keyring: Keyring | None = None

    @property
    def enabled(self) -> bool:
        return self.keyring is not None

    def record(self, cluster: str, namespace: str, name: str, key: str, *, scope: str,
               sealed_by: str, fingerprint: str, value: bytes) -> None:
        """Remember a seal (and, with escrow, its value in a new envelope)."""
        envelope = (wrap(self.keyring, value, place(cluster, namespace, name, key))
                    if self.keyring is not None else None)
        self.records.put(SealedKey(cluster, namespace, name, key, scope, time.time(),
                                   sealed_by, fingerprint, envelope))

    def value_of(self, record: SealedKey) -> bytes:
        """The escrowed value of ``record``, for a new seal only."""
        if self.keyring is None or record.envelope is None:
            raise EnvelopeError("not escrowed")
        return unwrap(self.keyring, record.envelope,
                      place(record.cluster, record.namespace, record.name, record.key))


def describe(record: SealedKey | None, current: str | None,
             unsealed: bool | str) -> dict[str, Any]:
    """What the listing shows of one key: when, by whom, to which certificate key it was
    sealed, whether it is escrowed, and whether it waits for a re-seal or a re-post."""
    if record is None:
        return {"sealedAt": None, "sealedBy": None, "certFingerprint": None,
                "escrowed": False, "needsRepost": False}
    stale = current is not None and record.fingerprint != current
    return {"sealedAt": int(record.sealed_at * 1000), "sealedBy": record.sealed_by,
            "certFingerprint": record.fingerprint, "escrowed": record.envelope is not None,
            "needsRepost": stale and record.envelope is None and unsealed is not True}


def summary(records: list[SealedKey], current: str | None) -> dict[str, Any]:
    """The status's ``secrets``: the certificate key sealed to now, how many escrowed keys
    still wait for a re-seal, and how many others need posting again."""
    stale = [r for r in records if current is not None and r.fingerprint != current]
    return {"sealedTo": current, "pending": sum(r.envelope is not None for r in stale),
            "repost": sum(r.envelope is None for r in stale)}


def unavailable(exc: DatabaseUnavailable) -> str:
    """What to tell a caller when the records cannot be reached."""
    return f"the Cluster Manager database cannot be reached: {exc}"
