"""A local CA and one server certificate for a self-contained HTTPS stack (``up --tls``).

The CA is made once and kept: edges bootstrapped with it keep trusting the stack. The server
certificate is issued again whenever the host names it must cover change, it comes near its
end, or the CA is no longer the one that signed it. Private keys are written with mode 0600
(the directory 0700), each file replaced atomically.
"""

from __future__ import annotations

import ipaddress
import os
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CA_DAYS = 3650
SERVER_DAYS = 397
RENEW_BEFORE = timedelta(days=30)
"""A server certificate this close to its end is issued again at the next start."""


@dataclass(frozen=True)
class StackCertificates:
    """Where the CA certificate and the server's certificate and key are."""

    ca: Path
    cert: Path
    key: Path


def _write(path: Path, data: bytes, mode: int) -> None:
    """``data`` into ``path`` with ``mode``, atomically (never a moment with looser modes)."""
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.unlink(missing_ok=True)
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    with os.fdopen(fd, "wb") as out:
        out.write(data)
    os.replace(temporary, path)


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "fplus-edge-manager"),
                      x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _usage(**allowed: bool) -> x509.KeyUsage:
    flags = dict.fromkeys(("digital_signature", "content_commitment", "key_encipherment",
                           "data_encipherment", "key_agreement", "key_cert_sign", "crl_sign",
                           "encipher_only", "decipher_only"), False)
    return x509.KeyUsage(**(flags | allowed))


def _general_name(host: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(host.strip("[]")))
    except ValueError:
        return x509.DNSName(host)


def _load_ca(directory: Path) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    """The kept CA, made first if there is none."""
    cert_path, key_path = directory / "ca.crt", directory / "ca.key"
    if cert_path.exists() and key_path.exists():
        key = serialization.load_pem_private_key(key_path.read_bytes(), password=None)
        assert isinstance(key, ec.EllipticCurvePrivateKey)
        return x509.load_pem_x509_certificate(cert_path.read_bytes()), key
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.now(UTC) - timedelta(minutes=5)
    subject = _name(f"fplus-edge-manager local CA ({socket.gethostname()})")
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now).not_valid_after(now + timedelta(days=CA_DAYS))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(_usage(key_cert_sign=True, crl_sign=True), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()),
                           critical=False)
            .sign(key, hashes.SHA256()))
    _write(key_path, _pem_key(key), 0o600)
    _write(cert_path, cert.public_bytes(serialization.Encoding.PEM), 0o644)
    return cert, key


def _still_good(cert_path: Path, ca: x509.Certificate, names: list[x509.GeneralName]) -> bool:
    """Whether the server certificate there covers ``names``, is far from its end and was
    signed by ``ca``."""
    try:
        cert = x509.load_pem_x509_certificate(cert_path.read_bytes())
        covered = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        cert.verify_directly_issued_by(ca)
    except (OSError, ValueError, TypeError, x509.ExtensionNotFound, InvalidSignature):
        return False
    return (set(covered) == set(names)
            and cert.not_valid_after_utc - datetime.now(UTC) > RENEW_BEFORE)


def ensure_certificates(directory: Path, hosts: Iterable[str]) -> StackCertificates:
    """The CA and a server certificate for ``hosts`` (names or IP addresses) in
    ``directory``, made or renewed as needed."""
    directory.mkdir(parents=True, exist_ok=True)
    directory.chmod(0o700)
    ca, ca_key = _load_ca(directory)
    wanted = list(dict.fromkeys(hosts))
    names = [_general_name(host) for host in wanted]
    found = StackCertificates(directory / "ca.crt", directory / "server.crt",
                              directory / "server.key")
    if found.key.exists() and _still_good(found.cert, ca, names):
        return found
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.now(UTC) - timedelta(minutes=5)
    cert = (x509.CertificateBuilder().subject_name(_name(wanted[0])).issuer_name(ca.subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now).not_valid_after(now + timedelta(days=SERVER_DAYS))
            .add_extension(x509.SubjectAlternativeName(names), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(_usage(digital_signature=True), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]),
                           critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(
                ca_key.public_key()), critical=False)
            .sign(ca_key, hashes.SHA256()))
    _write(found.key, _pem_key(key), 0o600)
    _write(found.cert, cert.public_bytes(serialization.Encoding.PEM), 0o644)
    return found
