"""One value in, one ``spec.encryptedData`` string out (what ``kubeseal --raw`` prints), and
back."""

from __future__ import annotations

import base64
import binascii

from cryptography.hazmat.primitives.asymmetric import rsa

from fplus.cluster_manager.sealing.errors import DecryptionError
from fplus.cluster_manager.sealing.hybrid import hybrid_decrypt, hybrid_encrypt
from fplus.cluster_manager.sealing.scope import encryption_label


def encrypt_value(public_key: rsa.RSAPublicKey, value: bytes, scope: str | None,
                  namespace: str, name: str) -> str:
    """``base64.StdEncoding`` (padded, no line breaks) of the sealed ``value``, bound to
    ``scope`` for ``namespace``/``name`` (which are validated where the label uses them).

    A fresh session key per call: sealing the same value twice gives different strings.
    """
    if not isinstance(public_key, rsa.RSAPublicKey):
        raise TypeError(f"public_key must be an RSAPublicKey, not {type(public_key).__name__}")
    if not isinstance(value, bytes | bytearray | memoryview):
        raise TypeError(f"value must be bytes, not {type(value).__name__}")
    label = encryption_label(scope, namespace, name)
    return base64.b64encode(hybrid_encrypt(public_key, bytes(value), label)).decode("ascii")


def decrypt_value(private_key: rsa.RSAPrivateKey, ciphertext_b64: str | bytes, scope: str | None,
                  namespace: str, name: str) -> bytes:
    """The plaintext of an ``encryptedData`` value (as the controller would unseal it); for tests
    and round trips. :class:`DecryptionError` on bad base64, a wrong key or a wrong label."""
    label = encryption_label(scope, namespace, name)
    try:
        text = (ciphertext_b64.encode("ascii") if isinstance(ciphertext_b64, str)
                else bytes(ciphertext_b64))
        # Go's StdEncoding skips CR and LF; anything else outside the standard alphabet fails
        blob = base64.b64decode(text.replace(b"\r", b"").replace(b"\n", b""), validate=True)
    except (binascii.Error, TypeError, ValueError):
        raise DecryptionError("the sealed value is not standard base64") from None
    return hybrid_decrypt(private_key, blob, label)
