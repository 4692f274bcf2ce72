"""Envelope encryption of one secret value: AES-256-GCM under a fresh data key, the data key
AES-256-GCM-wrapped under the escrow key.

Both encryptions are bound (associated data) to the value's place, ``cluster/namespace/
name/key``, and the wrap also to the escrow key id, so a row copied to another place or
relabelled with another key id does not decrypt.
"""

from __future__ import annotations

import base64
import os
from dataclasses import dataclass

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from .keyring import Keyring

NONCE_BYTES = 12


class EnvelopeError(ValueError):
    """An envelope does not decrypt (wrong key, wrong place, or altered)."""


@dataclass(frozen=True)
class Envelope:
    """An escrowed value as stored: base64 of ``nonce || ciphertext`` for the data key
    (wrapped under escrow key ``key_id``) and for the value."""

    key_id: str
    wrapped_key: str
    ciphertext: str


def _seal(key: bytes, plaintext: bytes, aad: bytes) -> str:
    nonce = os.urandom(NONCE_BYTES)
    return base64.b64encode(nonce + AESGCM(key).encrypt(nonce, plaintext, aad)).decode()


def _open(key: bytes, sealed: str, aad: bytes) -> bytes:
    try:
        raw = base64.b64decode(sealed, validate=True)
        if len(raw) < NONCE_BYTES:
            raise ValueError("too short")
        return AESGCM(key).decrypt(raw[:NONCE_BYTES], raw[NONCE_BYTES:], aad)
    except (InvalidTag, ValueError, TypeError):  # binascii.Error is a ValueError
        raise EnvelopeError("an escrowed value does not decrypt") from None


def place(cluster: str, namespace: str, name: str, key: str) -> bytes:
    """The associated data naming where a value belongs."""
    return f"{cluster}/{namespace}/{name}/{key}".encode()


def wrap(keyring: Keyring, value: bytes, where: bytes) -> Envelope:
    """``value`` in a new envelope under the keyring's current key."""
    data_key = AESGCM.generate_key(bit_length=256)
    key_id = keyring.current
    return Envelope(key_id, _seal(keyring.key(key_id), data_key, where + b"|" + key_id.encode()),
                    _seal(data_key, value, where))


def _data_key(keyring: Keyring, envelope: Envelope, where: bytes) -> bytes:
    kek = keyring.key(envelope.key_id)
    return _open(kek, envelope.wrapped_key, where + b"|" + envelope.key_id.encode())


def unwrap(keyring: Keyring, envelope: Envelope, where: bytes) -> bytes:
    """The value in ``envelope`` (only ever handed to a new seal)."""
    return _open(_data_key(keyring, envelope, where), envelope.ciphertext, where)


def rewrap(keyring: Keyring, envelope: Envelope, where: bytes) -> Envelope:
    """``envelope`` with its data key wrapped under the current key; the value's ciphertext
    is not touched."""
    data_key = _data_key(keyring, envelope, where)
    key_id = keyring.current
    return Envelope(key_id, _seal(keyring.key(key_id), data_key, where + b"|" + key_id.encode()),
                    envelope.ciphertext)
