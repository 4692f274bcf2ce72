"""The sealing certificate: the controller's ``/v1/cert.pem`` (our Edge cluster status entry's
``kubeseal_cert``), checked the way kubeseal's ``ParseKey`` does and a little more.

- Only the **first** certificate of the PEM text is used (as kubeseal does).
- Its key must be RSA (the Sealed Secrets wire format is RSA-OAEP) of at least
  :data:`MIN_KEY_BITS` bits (a smaller modulus is weak, and under 784 bits RSA-OAEP-SHA256
  cannot even hold the 32-byte session key).
- It must be inside its validity period: kubeseal refuses an expired certificate; we also refuse
  one that is not valid yet, allowing :data:`NOT_BEFORE_LEEWAY` of clock skew (the controller
  stamps ``NotBefore`` with its own clock at key creation, so a freshly rotated certificate seen
  from a central clock a little behind the edge would otherwise be refused).
"""

from __future__ import annotations

import base64
import hashlib
from datetime import UTC, datetime, timedelta

from cryptography import x509
from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from fplus.cluster_manager.sealing.errors import CertificateError

NOT_BEFORE_LEEWAY = timedelta(minutes=5)
MIN_KEY_BITS = 2048
"""Smallest RSA modulus accepted (the controller makes 4,096-bit keys; NIST's floor is 2,048)."""


def load_certificate(pem: str | bytes, now: datetime | None = None,
                     min_bits: int = MIN_KEY_BITS) -> rsa.RSAPublicKey:
    """The RSA public key of the first certificate in ``pem``, checked at ``now`` (default: the
    current time; a naive ``now`` is taken as UTC).

    Raises :class:`CertificateError` with a message fit for an HTTP 422 body when the text holds
    no parsable PEM certificate, when the key is not RSA or shorter than ``min_bits``, or when
    the certificate has expired or is not valid yet.
    """
    cert = _first_certificate(pem)
    try:
        key = cert.public_key()
    except (ValueError, UnsupportedAlgorithm) as exc:
        raise CertificateError(f"the sealing certificate's public key cannot be read: {exc}") \
            from None
    if not isinstance(key, rsa.RSAPublicKey):
        raise CertificateError(f"the sealing certificate has a {_key_kind(key)} key; Sealed "
                               f"Secrets certificates must have an RSA key")
    if key.key_size < min_bits:
        raise CertificateError(f"the sealing certificate has a {key.key_size}-bit RSA key; at "
                               f"least {min_bits} bits are required")
    _check_validity(cert, _utc(now) if now is not None else datetime.now(UTC))
    return key


def public_key_fingerprint(public_key: rsa.RSAPublicKey) -> str:
    """``SHA256:<base64, unpadded>`` of the SSH wire form of the key: the id the controller's key
    registry uses (``ssh.FingerprintSHA256``), handy for logging which key sealed a value."""
    ssh = public_key.public_bytes(serialization.Encoding.OpenSSH,
                                  serialization.PublicFormat.OpenSSH)
    blob = base64.b64decode(ssh.split()[1])
    return "SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")


def _first_certificate(pem: str | bytes) -> x509.Certificate:
    if isinstance(pem, str):
        try:
            data = pem.encode("ascii")
        except UnicodeEncodeError:
            raise CertificateError("the sealing certificate is not PEM text (it contains "
                                   "non-ASCII characters)") from None
    elif isinstance(pem, bytes | bytearray | memoryview):
        data = bytes(pem)
    else:
        raise CertificateError(f"the sealing certificate must be PEM text, not a "
                               f"{type(pem).__name__}")
    if not data.strip():
        raise CertificateError("the sealing certificate is empty")
    if b"-----BEGIN CERTIFICATE-----" not in data:
        raise CertificateError("the sealing certificate is not a PEM certificate (no "
                               "'-----BEGIN CERTIFICATE-----' block)")
    try:
        certs = x509.load_pem_x509_certificates(data)
    except ValueError as exc:
        raise CertificateError(f"the sealing certificate is not a valid PEM X.509 certificate: "
                               f"{exc}") from None
    if not certs:  # pragma: no cover - cryptography raises instead
        raise CertificateError("the sealing certificate holds no certificate")
    return certs[0]


def _check_validity(cert: x509.Certificate, now: datetime) -> None:
    not_before, not_after = _validity(cert)
    if now > not_after:
        raise CertificateError(f"the sealing certificate expired on {_iso(not_after)} (now "
                               f"{_iso(now)}); the cluster must publish its current "
                               f"sealed-secrets certificate")
    if now + NOT_BEFORE_LEEWAY < not_before:
        raise CertificateError(f"the sealing certificate is not valid yet: it is valid from "
                               f"{_iso(not_before)} (now {_iso(now)})")


def _validity(cert: x509.Certificate) -> tuple[datetime, datetime]:
    if hasattr(cert, "not_valid_before_utc"):  # cryptography >= 42
        return cert.not_valid_before_utc, cert.not_valid_after_utc
    return _utc(cert.not_valid_before), _utc(cert.not_valid_after)  # pragma: no cover


def _utc(moment: datetime) -> datetime:
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _key_kind(key: object) -> str:
    name = type(key).__name__  # e.g. EllipticCurvePublicKey, Ed25519PublicKey, DSAPublicKey
    curve = getattr(key, "curve", None)
    kind = name.removesuffix("PublicKey").removeprefix("_") or name
    if kind == "EllipticCurve":
        kind = "EC"
    return f"{kind} ({curve.name})" if curve is not None else kind
