"""The edge control plane's own certificates: a CA, the API server's serving certificate, an
administrator's client certificate, the service-account signing key (ECDSA P-256), and the
pair a real cluster has between the API server and its kubelets: the kubelet's serving
certificate (here kwok's, for 127.0.0.1, verified by the API server) and the API server's
client certificate for reaching kubelets."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

API_NAMES = ("localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
             "kubernetes.default.svc.cluster.local")
API_IPS = ("127.0.0.1", "10.96.0.1")
KUBELET_NAMES = ("localhost",)  # every node's InternalIP is 127.0.0.1 (kwok's --node-ip)
KUBELET_IPS = ("127.0.0.1",)


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _name(cn: str, org: str | None = None) -> x509.Name:
    parts = [x509.NameAttribute(NameOID.COMMON_NAME, cn)]
    if org:
        parts.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, org))
    return x509.Name(parts)


@dataclass(frozen=True)
class Pki:
    """File paths of everything the control plane and its clients need."""

    ca_crt: Path
    serving_crt: Path
    serving_key: Path
    admin_crt: Path
    admin_key: Path
    sa_key: Path
    sa_pub: Path
    kubelet_crt: Path
    kubelet_key: Path
    kubelet_client_crt: Path
    kubelet_client_key: Path


def make_pki(directory: Path) -> Pki:
    """Write a fresh CA, serving and admin certificates and the SA key into ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    now = datetime.now(UTC) - timedelta(minutes=5)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (x509.CertificateBuilder().subject_name(_name("fplus-edge-ca"))
          .issuer_name(_name("fplus-edge-ca")).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(now)
          .not_valid_after(now + timedelta(days=2))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .sign(ca_key, hashes.SHA256()))

    def issue(cn: str, org: str | None, server: bool,
              names: tuple[str, ...] = API_NAMES,
              ips: tuple[str, ...] = API_IPS) -> tuple[bytes, bytes]:
        key = ec.generate_private_key(ec.SECP256R1())
        usage = ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH
        builder = (x509.CertificateBuilder().subject_name(_name(cn, org))
                   .issuer_name(ca.subject).public_key(key.public_key())
                   .serial_number(x509.random_serial_number()).not_valid_before(now)
                   .not_valid_after(now + timedelta(days=2))
                   .add_extension(x509.ExtendedKeyUsage([usage]), critical=False))
        if server:
            alt: list[x509.GeneralName] = [x509.DNSName(n) for n in names]
            alt += [x509.IPAddress(ipaddress.ip_address(a)) for a in ips]
            builder = builder.add_extension(x509.SubjectAlternativeName(alt), critical=False)
        cert = builder.sign(ca_key, hashes.SHA256())
        return cert.public_bytes(serialization.Encoding.PEM), _key_pem(key)

    sa = ec.generate_private_key(ec.SECP256R1())
    files = {
        "ca.crt": ca.public_bytes(serialization.Encoding.PEM),
        "sa.key": _key_pem(sa),
        "sa.pub": sa.public_key().public_bytes(serialization.Encoding.PEM,
                                               serialization.PublicFormat.SubjectPublicKeyInfo),
    }
    files["serving.crt"], files["serving.key"] = issue("kube-apiserver", None, server=True)
    files["admin.crt"], files["admin.key"] = issue("fplus-edge-admin", "system:masters",
                                                   server=False)
    files["kubelet.crt"], files["kubelet.key"] = issue("kwok-kubelet", None, server=True,
                                                       names=KUBELET_NAMES, ips=KUBELET_IPS)
    files["kubelet-client.crt"], files["kubelet-client.key"] = issue(
        "kube-apiserver-kubelet-client", None, server=False)
    for name, data in files.items():
        (directory / name).write_bytes(data)
        (directory / name).chmod(0o600)
    return Pki(*(directory / n for n in ("ca.crt", "serving.crt", "serving.key", "admin.crt",
                                         "admin.key", "sa.key", "sa.pub", "kubelet.crt",
                                         "kubelet.key", "kubelet-client.crt",
                                         "kubelet-client.key")))
