"""Sealed Secrets' hybrid encryption (``pkg/crypto`` ``HybridEncrypt``/``HybridDecrypt``),
byte-compatible with kubeseal:

    uint16_be(len(rsa_ct)) ‖ rsa_ct ‖ aes_gcm_ct ‖ tag16

- ``rsa_ct``: RSA-OAEP of a fresh 32-byte session key, hash SHA-256 and MGF1-SHA-256, OAEP label
  = the scope label (empty for cluster-wide); as long as the modulus (512 bytes for 4096 bits).
- the rest: AES-256-GCM of the plaintext under the session key with an all-zero 12-byte nonce
  and no associated data. The zero nonce is safe only because every call draws a new session
  key; never reuse one.
"""

from __future__ import annotations

import os
import struct

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from fplus.cluster_manager.sealing.errors import DecryptionError

SESSION_KEY_BYTES = 32
NONCE = bytes(12)
_LENGTH = struct.Struct(">H")


def _oaep(label: bytes) -> padding.OAEP:
    return padding.OAEP(mgf=padding.MGF1(algorithm=hashes.SHA256()), algorithm=hashes.SHA256(),
                        label=label or None)


def hybrid_encrypt(public_key: rsa.RSAPublicKey, plaintext: bytes, label: bytes) -> bytes:
    """The sealed blob of ``plaintext`` for ``public_key`` bound to OAEP ``label``."""
    session_key = os.urandom(SESSION_KEY_BYTES)
    rsa_part = public_key.encrypt(session_key, _oaep(label))
    return _LENGTH.pack(len(rsa_part)) + rsa_part + AESGCM(session_key).encrypt(
        NONCE, plaintext, None)


def hybrid_decrypt(private_key: rsa.RSAPrivateKey, blob: bytes, label: bytes) -> bytes:
    """The plaintext of a sealed blob; :class:`DecryptionError` if it is malformed, was sealed
    for another key or another label, or was tampered with."""
    if len(blob) < _LENGTH.size:
        raise DecryptionError("sealed value too short")
    (rsa_len,) = _LENGTH.unpack_from(blob)
    if len(blob) < _LENGTH.size + rsa_len:
        raise DecryptionError("sealed value shorter than its RSA part")
    rsa_part = blob[_LENGTH.size:_LENGTH.size + rsa_len]
    try:
        session_key = private_key.decrypt(rsa_part, _oaep(label))
    except ValueError:
        raise DecryptionError("the session key does not decrypt (another key, scope, namespace "
                              "or name)") from None
    if len(session_key) != SESSION_KEY_BYTES:
        raise DecryptionError("the session key has the wrong length")
    try:
        return AESGCM(session_key).decrypt(NONCE, blob[_LENGTH.size + rsa_len:], None)
    except InvalidTag:
        raise DecryptionError("the sealed value fails authentication") from None
