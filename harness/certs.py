"""Sealing certificates shaped like the Sealed Secrets controller's."""

from __future__ import annotations

import functools
import subprocess
from datetime import UTC, datetime, timedelta
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ed25519, rsa
from cryptography.x509.oid import NameOID

NOW = datetime.now(UTC)


def make_cert(key: Any, not_before: datetime | None = None, not_after: datetime | None = None,
              cn: str = "sealed-secret") -> str:
    """A self-signed certificate for ``key`` shaped like the controller's (CA, encipher-only);
    valid from now for ten years unless told otherwise."""
    not_before = not_before or NOW - timedelta(minutes=1)
    not_after = not_after or not_before + timedelta(days=3650)
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])
    usage = x509.KeyUsage(digital_signature=False, content_commitment=False,
                          key_encipherment=False, data_encipherment=False, key_agreement=True,
                          key_cert_sign=False, crl_sign=False, encipher_only=True,
                          decipher_only=False)
    builder = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject)
               .public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(not_before).not_valid_after(not_after)
               .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
               .add_extension(usage, critical=True))
    algorithm = None if isinstance(key, ed25519.Ed25519PrivateKey) else hashes.SHA256()
    return builder.sign(key, algorithm).public_bytes(serialization.Encoding.PEM).decode()


@functools.cache
def _key(index: int) -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def weak_rsa_key(bits: int) -> rsa.RSAPrivateKey:
    """An RSA key of ``bits`` bits, made by ``openssl genrsa`` (``cryptography`` refuses to make
    keys under 1,024 bits): for tests that an edge reporting a weak key is refused."""
    pem = subprocess.run(["openssl", "genrsa", str(bits)], check=True, capture_output=True,
                         timeout=30).stdout
    key = serialization.load_pem_private_key(pem, password=None)
    assert isinstance(key, rsa.RSAPrivateKey) and key.key_size == bits
    return key


def certificate(index: int = 0, *, days_ago: int = 0) -> str:
    """A controller-like certificate for the 2,048-bit RSA key number ``index`` (one key per
    index per process), issued ``days_ago`` days ago and named ``sealed-secrets-<index>``."""
    not_before = datetime.now(UTC) - timedelta(days=days_ago, minutes=1)
    return make_cert(_key(index), not_before=not_before, cn=f"sealed-secrets-{index}")
