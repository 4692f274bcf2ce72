"""Sealed values decrypt with independent tools: the RSA part with the ``openssl pkeyutl`` CLI
(OAEP, SHA-256, MGF1-SHA-256, label in hex) and the AES part with ``cryptography``'s AESGCM and
a zero nonce — for all three scopes, for a key made by ``cryptography`` and one made by
``openssl req``. A wrong label must not decrypt."""

from __future__ import annotations

import base64
import os
import re
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

pytest.importorskip("cryptography", reason="fplus.cluster_manager.sealing needs `cryptography`")

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from fplus.cluster_manager.sealing import (
    DecryptionError,
    InvalidName,
    ScopeError,
    decrypt_value,
    encrypt_value,
    load_certificate,
)
from harness.certs import make_cert

NS, NAME = "fplus-edge", "edge-agent-sensitive-information-0b6d6e2c"
STD_BASE64 = re.compile(r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?")

# scope, the label it must use for NS/NAME
SCOPES = [
    ("strict", f"{NS}/{NAME}".encode()),
    ("namespace-wide", NS.encode()),
    ("cluster-wide", b""),
]
VALUES = [
    b"s3cr3t!",
    b"",
    bytes(range(256)) * 4,
    "pässwörd ✓\n".encode(),
]


@dataclass(frozen=True)
class Keypair:
    origin: str
    key_file: Path  # PEM private key, mode 0600, for openssl
    cert_pem: str

    @property
    def public(self) -> rsa.RSAPublicKey:
        return load_certificate(self.cert_pem)

    @property
    def private(self) -> rsa.RSAPrivateKey:
        key = serialization.load_pem_private_key(self.key_file.read_bytes(), password=None)
        assert isinstance(key, rsa.RSAPrivateKey)
        return key


def _private_file(directory: Path) -> Path:
    path = directory / "tls.key"
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    return path


def _cryptography_keypair(directory: Path) -> Keypair:
    key = rsa.generate_private_key(public_exponent=65537, key_size=4096)
    path = _private_file(directory)
    # PKCS#1 "RSA PRIVATE KEY", as the controller stores tls.key
    path.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                       serialization.PrivateFormat.TraditionalOpenSSL,
                                       serialization.NoEncryption()))
    return Keypair("cryptography", path, make_cert(key))


def _openssl_keypair(directory: Path) -> Keypair:
    path, cert = _private_file(directory), directory / "tls.crt"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:4096", "-nodes", "-keyout",
                    str(path), "-out", str(cert), "-days", "3650", "-subj", "/CN=sealed-secret",
                    "-addext", "basicConstraints=critical,CA:TRUE"],
                   check=True, capture_output=True)
    path.chmod(0o600)
    return Keypair("openssl", path, cert.read_text())


@pytest.fixture(scope="module", params=["cryptography", "openssl"])
def keypair(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Keypair:
    directory = tmp_path_factory.mktemp(f"sealing-{request.param}")
    make = _cryptography_keypair if request.param == "cryptography" else _openssl_keypair
    pair = make(directory)
    assert pair.key_file.stat().st_mode & 0o777 == 0o600
    return pair


def split(ciphertext: str) -> tuple[int, bytes, bytes]:
    """(declared RSA length, RSA part, AES-GCM part) of a sealed value."""
    assert STD_BASE64.fullmatch(ciphertext), "not standard padded base64 on one line"
    blob = base64.b64decode(ciphertext, validate=True)
    length = int.from_bytes(blob[:2], "big")
    return length, blob[2:2 + length], blob[2 + length:]


def openssl_unwrap(key_file: Path, rsa_part: bytes, label: bytes,
                   tmp_path: Path) -> subprocess.CompletedProcess[bytes]:
    """``openssl pkeyutl -decrypt`` of the RSA part with OAEP-SHA256 and ``label``."""
    source = tmp_path / "rsa.bin"
    source.write_bytes(rsa_part)
    command = ["openssl", "pkeyutl", "-decrypt", "-inkey", str(key_file), "-in", str(source),
               "-pkeyopt", "rsa_padding_mode:oaep", "-pkeyopt", "rsa_oaep_md:sha256",
               "-pkeyopt", "rsa_mgf1_md:sha256"]
    if label:  # the empty label is OpenSSL's default
        command += ["-pkeyopt", f"rsa_oaep_label:{label.hex()}"]
    return subprocess.run(command, capture_output=True)


@pytest.mark.parametrize("value", VALUES, ids=["ascii", "empty", "binary-1k", "utf8"])
@pytest.mark.parametrize(("scope", "label"), SCOPES, ids=[s for s, _ in SCOPES])
def test_openssl_and_aesgcm_decrypt_our_output(keypair: Keypair, scope: str, label: bytes,
                                               value: bytes, tmp_path: Path) -> None:
    ciphertext = encrypt_value(keypair.public, value, scope, NS, NAME)
    length, rsa_part, aes_part = split(ciphertext)
    assert length == len(rsa_part) == 512  # 4096-bit modulus
    assert len(aes_part) == len(value) + 16  # GCM ciphertext ‖ 16-byte tag
    assert re.match(r"Ag[A-D]", ciphertext)  # 0x02 0x00 …: the familiar kubeseal "AgB…"
    done = openssl_unwrap(keypair.key_file, rsa_part, label, tmp_path)
    assert done.returncode == 0, done.stderr.decode()
    session_key = done.stdout
    assert len(session_key) == 32
    assert AESGCM(session_key).decrypt(bytes(12), aes_part, None) == value


# scope sealed in → labels (other namespace, other name, other scope) that must not open it
WRONG_LABELS = [
    ("strict", [f"other-ns/{NAME}", f"{NS}/other-name", NS, "", f"{NS}{NAME}", f"{NS}/{NAME}/"]),
    ("namespace-wide", ["other-ns", f"{NS}/{NAME}", "", f"{NS}/"]),
    ("cluster-wide", [NS, f"{NS}/{NAME}", " "]),
]


@pytest.mark.parametrize(("scope", "wrong"), WRONG_LABELS, ids=[s for s, _ in WRONG_LABELS])
def test_a_wrong_label_does_not_decrypt_with_openssl(keypair: Keypair, scope: str,
                                                     wrong: list[str], tmp_path: Path) -> None:
    _, rsa_part, _ = split(encrypt_value(keypair.public, b"value", scope, NS, NAME))
    for label in wrong:
        done = openssl_unwrap(keypair.key_file, rsa_part, label.encode(), tmp_path)
        assert done.returncode != 0, f"label {label!r} decrypted a {scope} value"
        assert len(done.stdout) != 32


def _opens(private: rsa.RSAPrivateKey, ciphertext: str, scope: str, ns: str, name: str) -> bool:
    try:
        return decrypt_value(private, ciphertext, scope, ns, name) == b"round trip"
    except DecryptionError:
        return False


@pytest.mark.parametrize(("scope", "label"), SCOPES, ids=[s for s, _ in SCOPES])
def test_round_trip_and_wrong_context(keypair: Keypair, scope: str, label: bytes) -> None:
    private = keypair.private
    ciphertext = encrypt_value(keypair.public, b"round trip", scope, NS, NAME)
    assert _opens(private, ciphertext, scope, NS, NAME)
    # what each scope binds: the namespace for all but cluster-wide, the name for strict only
    assert _opens(private, ciphertext, scope, NS, "other") == (scope != "strict")
    assert _opens(private, ciphertext, scope, "other", NAME) == (scope == "cluster-wide")


def test_scopes_do_not_open_each_other(keypair: Keypair) -> None:
    private = keypair.private
    for sealed, _ in SCOPES:
        ciphertext = encrypt_value(keypair.public, b"round trip", sealed, NS, NAME)
        for opened, _ in SCOPES:
            assert _opens(private, ciphertext, opened, NS, NAME) == (sealed == opened)
        assert not _opens(private, ciphertext, sealed, "other-ns", NAME) \
            or sealed == "cluster-wide"


def test_fresh_session_key_per_call(keypair: Keypair) -> None:
    public = keypair.public
    sealed = [encrypt_value(public, b"same value", "strict", NS, NAME) for _ in range(3)]
    assert len(set(sealed)) == 3
    parts = [split(c) for c in sealed]
    assert len({rsa_part for _, rsa_part, _ in parts}) == 3
    assert len({aes_part for _, _, aes_part in parts}) == 3  # different session keys


def test_2048_bit_key_layout() -> None:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    ciphertext = encrypt_value(key.public_key(), b"1234567", "strict", NS, NAME)
    length, rsa_part, aes_part = split(ciphertext)
    assert (length, len(rsa_part), len(aes_part)) == (256, 256, 7 + 16)
    assert re.match(r"AQ[A-D]", ciphertext)
    assert decrypt_value(key, ciphertext, "strict", NS, NAME) == b"1234567"


@pytest.fixture(scope="module")
def small_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _tamper_aes(ciphertext: str) -> str:
    blob = bytearray(base64.b64decode(ciphertext))
    blob[-1] ^= 1
    return base64.b64encode(bytes(blob)).decode()


def _urlsafe(ciphertext: str) -> str:
    assert "+" in ciphertext or "/" in ciphertext
    return ciphertext.replace("+", "-").replace("/", "_")


def _truncate(n: int) -> Callable[[str], str]:
    return lambda c: base64.b64encode(base64.b64decode(c)[:n]).decode()


BROKEN: list[tuple[str, Callable[[str], str], str]] = [
    ("tampered tag", _tamper_aes, "authentication"),
    ("url-safe alphabet", _urlsafe, "base64"),
    ("not base64", lambda c: "not base64!", "base64"),
    ("non-ASCII", lambda c: "ä" + c, "base64"),
    ("empty", lambda c: "", "too short"),
    ("1 byte", _truncate(1), "too short"),
    ("RSA part cut", _truncate(100), "shorter than its RSA part"),
    ("AES part cut", _truncate(258 + 5), "authentication"),
]


@pytest.mark.parametrize(("case", "breaks", "words"), BROKEN, ids=[b[0] for b in BROKEN])
def test_broken_ciphertexts_raise_decryption_error(small_key: rsa.RSAPrivateKey, case: str,
                                                   breaks: Callable[[str], str],
                                                   words: str) -> None:
    ciphertext = encrypt_value(small_key.public_key(), b"value " * 20, "strict", NS, NAME)
    with pytest.raises(DecryptionError, match=words):
        decrypt_value(small_key, breaks(ciphertext), "strict", NS, NAME)


def test_line_breaks_in_base64_are_ignored_like_go(small_key: rsa.RSAPrivateKey) -> None:
    ciphertext = encrypt_value(small_key.public_key(), b"v", "strict", NS, NAME)
    wrapped = "\r\n".join(ciphertext[i:i + 76] for i in range(0, len(ciphertext), 76))
    assert decrypt_value(small_key, wrapped, "strict", NS, NAME) == b"v"
    assert decrypt_value(small_key, wrapped.encode(), "strict", NS, NAME) == b"v"


def test_another_key_does_not_decrypt(small_key: rsa.RSAPrivateKey) -> None:
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    ciphertext = encrypt_value(small_key.public_key(), b"v", "cluster-wide", "", "")
    with pytest.raises(DecryptionError, match="does not decrypt"):
        decrypt_value(other, ciphertext, "cluster-wide", "", "")


def test_bad_arguments(small_key: rsa.RSAPrivateKey) -> None:
    public = small_key.public_key()
    with pytest.raises(TypeError, match="bytes"):
        encrypt_value(public, "text", "strict", NS, NAME)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="RSAPublicKey"):
        encrypt_value(ec.generate_private_key(ec.SECP256R1()).public_key(),  # type: ignore[arg-type]
                      b"v", "strict", NS, NAME)
    with pytest.raises(ScopeError, match="strict, namespace-wide, cluster-wide"):
        encrypt_value(public, b"v", "Strict", NS, NAME)
    with pytest.raises(InvalidName, match="namespace"):
        encrypt_value(public, b"v", "strict", "../x", NAME)
    with pytest.raises(InvalidName, match="name"):
        encrypt_value(public, b"v", "strict", NS, "a/b")
    with pytest.raises(InvalidName, match="namespace"):
        encrypt_value(public, b"v", "namespace-wide", "Upper", "")
    # bytearray and memoryview values are bytes too; cluster-wide needs no namespace or name
    for value in (bytearray(b"v"), memoryview(b"v")):
        assert decrypt_value(small_key, encrypt_value(public, value, "cluster-wide", "", ""),
                             "cluster-wide", "", "") == b"v"
