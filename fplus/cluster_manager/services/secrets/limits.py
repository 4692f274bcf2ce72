"""How much one sealed secret may hold, so that what is committed is what Kubernetes stores.

A SealedSecret is one object in etcd (a request of at most 1.5 MiB) and unseals into one
Secret, whose data Kubernetes caps at 1 MiB. The probe sealed three 1 MB keys into a 3.7 MB
SealedSecret that would fail on the edge. Checked before anything is committed:

- :data:`VALUE_BYTES`: one key's value — 413;
- :data:`SECRET_DATA_BYTES`: the values of one Secret together, as the edge unseals them
  (Kubernetes' own limit) — 413;
- :data:`SEALED_BYTES`: the sealed values of one SealedSecret together (base64, a third
  larger than the values plus each key's RSA part), leaving 100 KiB of etcd's 1.5 MiB for
  the rest of the object — 413;
- :data:`SECRET_KEYS`: keys of one Secret — 422.

A change that makes an already oversized document no larger (a key replaced by a smaller
value) is let through, so an old document can always be shrunk; removing keys always is.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import Any

from ..errors import TooLarge, Unprocessable

VALUE_BYTES = 1024 * 1024
SECRET_DATA_BYTES = 1024 * 1024
SEALED_BYTES = 1400 * 1024
SECRET_KEYS = 100
_WHERE = "fplus.cluster_manager.services.secrets.limits"
_GCM_TAG = 16


def check_value(value: bytes) -> None:
    """413 if one value is over :data:`VALUE_BYTES`."""
    if len(value) > VALUE_BYTES:
        raise TooLarge(f"the value is {len(value)} bytes: a sealed value holds at most "
                       f"{VALUE_BYTES} bytes ({_WHERE}.VALUE_BYTES); nothing was sealed")


def check_document(before: Mapping[str, Any] | None, after: Mapping[str, Any],
                   where: str) -> None:
    """413/422 if ``after`` (the SealedSecret ``where`` once changed) is over a limit and
    larger than ``before`` was by that measure."""
    old, new = _data(before), _data(after)
    if len(new) > SECRET_KEYS and len(new) > len(old):
        raise Unprocessable(f"{where} would hold {len(new)} keys: a sealed secret holds at "
                            f"most {SECRET_KEYS} ({_WHERE}.SECRET_KEYS); nothing was sealed")
    for measure, noun, limit, name, why in (
            (_unsealed, "values", SECRET_DATA_BYTES, "SECRET_DATA_BYTES",
             "the most Kubernetes stores in one Secret"),
            (_sealed, "sealed values", SEALED_BYTES, "SEALED_BYTES",
             "under the 1.5 MiB etcd stores in one object")):
        size = measure(new)
        if size > limit and size > measure(old):
            raise TooLarge(f"{where} would hold {size} bytes of {noun}: at most {limit} "
                           f"({_WHERE}.{name}; {why}); nothing was sealed")


def _data(doc: Mapping[str, Any] | None) -> dict[str, str]:
    data = ((doc or {}).get("spec") or {}).get("encryptedData")
    if not isinstance(data, Mapping):
        return {}
    return {str(k): v for k, v in data.items() if isinstance(v, str)}


def _sealed(data: Mapping[str, str]) -> int:
    return sum(len(k) + len(v) for k, v in data.items())


def _unsealed(data: Mapping[str, str]) -> int:
    """What the values add up to once unsealed: each sealed blob less its length prefix,
    RSA part and GCM tag (a blob that does not decode counts whole)."""
    total = 0
    for value in data.values():
        try:
            blob = base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            total += len(value)
            continue
        rsa = int.from_bytes(blob[:2], "big")
        total += max(0, len(blob) - 2 - rsa - _GCM_TAG)
    return total
