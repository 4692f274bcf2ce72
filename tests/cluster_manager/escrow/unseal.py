"""An unsealer written for these tests, independent of ``fplus.cluster_manager.sealing``: what the
Sealed Secrets controller does with one ``encryptedData`` value.

Blob (after standard base64): ``uint16_be(n) ‖ RSA-OAEP(SHA-256, MGF1-SHA-256, label)(session
key, n bytes) ‖ AES-256-GCM(session key, nonce = 12 zero bytes, no AAD)(value) ‖ tag``. The
OAEP label comes from the SealedSecret's own metadata: ``"<ns>/<name>"`` (strict),
``"<ns>"`` (annotation namespace-wide: "true") or empty (cluster-wide: "true", which wins).
"""

from __future__ import annotations

import base64
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

CLUSTER_WIDE = "sealedsecrets.bitnami.com/cluster-wide"
NAMESPACE_WIDE = "sealedsecrets.bitnami.com/namespace-wide"


def label_of(doc: dict[str, Any]) -> bytes:
    """The OAEP label the controller would use for this SealedSecret."""
    meta = doc["metadata"]
    annotations = meta.get("annotations") or {}
    if annotations.get(CLUSTER_WIDE) == "true":
        return b""
    if annotations.get(NAMESPACE_WIDE) == "true":
        return meta["namespace"].encode()
    return f"{meta['namespace']}/{meta['name']}".encode()


def unseal(key: rsa.RSAPrivateKey, value: str, label: bytes) -> bytes:
    """The plaintext of one ``encryptedData`` value (raises if it is not for ``key``)."""
    blob = base64.b64decode(value, validate=True)
    length = int.from_bytes(blob[:2], "big")
    assert length == key.key_size // 8, (length, key.key_size)
    oaep = padding.OAEP(mgf=padding.MGF1(hashes.SHA256()), algorithm=hashes.SHA256(),
                        label=label or None)
    session = key.decrypt(blob[2:2 + length], oaep)
    assert len(session) == 32
    return AESGCM(session).decrypt(bytes(12), blob[2 + length:], None)


def unseal_file(key: rsa.RSAPrivateKey, doc: dict[str, Any]) -> dict[str, bytes]:
    """Every key of a SealedSecret document, unsealed."""
    label = label_of(doc)
    return {k: unseal(key, v, label) for k, v in doc["spec"]["encryptedData"].items()}


def opens(key: rsa.RSAPrivateKey, value: str, label: bytes) -> bool:
    """Whether ``value`` unseals with ``key`` and ``label``."""
    try:
        unseal(key, value, label)
    except (ValueError, AssertionError, InvalidTag):
        return False
    return True
