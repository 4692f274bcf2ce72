"""The Sealed Secrets controller's certificate: fetched, checked and reported.

First choice is what ``kubeseal --fetch-cert`` does: ``GET /v1/cert.pem`` through the API
server's service proxy (the controller serves its newest certificate there). If that
fails (controller not running, proxy refused), the newest active key Secret
(label ``sealedsecrets.bitnami.com/sealed-secrets-key=active``) provides ``tls.crt``.
"""

from __future__ import annotations

import base64
import logging
import threading
from collections.abc import Callable
from datetime import datetime

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization

from fplus.jsontypes import as_list, as_object

from .kube import KUBE_OR_JSON_ERRORS, Kube, KubeObject, describe

log = logging.getLogger(__name__)

ACTIVE_KEY_LABEL = "sealedsecrets.bitnami.com/sealed-secrets-key"
ACTIVE_KEY_SELECTOR = f"{ACTIVE_KEY_LABEL}=active"
CERT_PATH = "v1/cert.pem"


class CertificateUnavailable(Exception):
    """Neither the service proxy nor the key Secrets gave a certificate."""


def first_certificate(pem: bytes | str) -> x509.Certificate:
    """The first certificate of a PEM bundle (as kubeseal uses only the first); ValueError."""
    data = pem.encode() if isinstance(pem, str) else pem
    try:
        certs = x509.load_pem_x509_certificates(data)
    except ValueError:
        raise ValueError("not a PEM certificate") from None
    return certs[0]


def to_pem(cert: x509.Certificate) -> str:
    return cert.public_bytes(serialization.Encoding.PEM).decode("ascii")


def fingerprint(pem: str) -> str:
    """SHA-256 fingerprint of a PEM certificate, for logs."""
    return first_certificate(pem).fingerprint(hashes.SHA256()).hex()[:16]


def _secret_certificate(secret: KubeObject) -> x509.Certificate | None:
    labels = as_object(as_object(secret.get("metadata")).get("labels"))
    if labels.get(ACTIVE_KEY_LABEL) != "active":  # selectors may be ignored by proxies
        return None
    raw = as_object(secret.get("data")).get("tls.crt")
    if not isinstance(raw, str):
        return None
    try:
        return first_certificate(base64.b64decode(raw, validate=True))
    except ValueError:
        return None


class CertificateSource:
    """Fetches the controller's current certificate as a normalised PEM string."""

    def __init__(self, kube: Kube, namespace: str, controller: str,
                 port: str | None = None) -> None:
        self.kube = kube
        self.namespace = namespace
        self.controller = controller
        self.port = port

    def via_proxy(self) -> str:
        """``GET …/services/http:<controller>:<port>/proxy/v1/cert.pem``."""
        port = self.port or self._service_port()
        body = self.kube.proxy_get(self.namespace, f"http:{self.controller}:{port}", CERT_PATH)
        return to_pem(first_certificate(body))

    def _service_port(self) -> str:
        """The Service's first port, by name if it has one (as kubeseal picks it)."""
        service = self.kube.read_service(self.namespace, self.controller)
        ports = as_list(as_object(service.get("spec")).get("ports"))
        first = as_object(ports[0] if ports else None)
        return str(first.get("name") or first.get("port") or "http")

    def via_secret(self) -> str:
        """``tls.crt`` of the newest active key Secret (newest by certificate NotBefore)."""
        secrets = self.kube.list_secrets(self.namespace, ACTIVE_KEY_SELECTOR)
        found: list[tuple[datetime, str, x509.Certificate]] = []
        for secret in secrets:
            cert = _secret_certificate(secret)
            if cert is not None:
                created = as_object(secret.get("metadata")).get("creationTimestamp") or ""
                found.append((cert.not_valid_before_utc, str(created), cert))
        if not found:
            raise ValueError(f"no active key Secret in {self.namespace}")
        return to_pem(max(found, key=lambda item: (item[0], item[1]))[2])

    def fetch(self) -> str:
        """The certificate, via the proxy or else via the Secrets."""
        try:
            return self.via_proxy()
        except KUBE_OR_JSON_ERRORS as exc:
            proxy_error = describe(exc) if not isinstance(exc, ValueError) else str(exc)
        try:
            pem = self.via_secret()
        except KUBE_OR_JSON_ERRORS as exc:
            secret_error = describe(exc) if not isinstance(exc, ValueError) else str(exc)
            raise CertificateUnavailable(
                f"service proxy: {proxy_error}; key Secrets: {secret_error}") from None
        log.info("certificate: service proxy failed (%s); using the active key Secret",
                 proxy_error)
        return pem


class CertificateWatcher:
    """Reports the certificate at start and after every change (checked periodically)."""

    def __init__(self, source: CertificateSource, on_cert: Callable[[str], None], *,
                 interval: float = 3600.0, retry: float = 60.0) -> None:
        self.source = source
        self.on_cert = on_cert
        self.interval = interval
        self.retry = retry
        self._last: str | None = None
        self._last_error: str | None = None

    def check(self) -> bool:
        """Fetch once; report if new. False if no certificate could be fetched."""
        try:
            pem = self.source.fetch()
        except CertificateUnavailable as exc:
            level = logging.WARNING if str(exc) != self._last_error else logging.DEBUG
            log.log(level, "certificate unavailable: %s", exc)
            self._last_error = str(exc)
            return False
        self._last_error = None
        if pem != self._last:
            log.info("certificate %s from %s/%s", fingerprint(pem), self.source.namespace,
                     self.source.controller)
            self._last = pem
            self.on_cert(pem)
        return True

    def run(self, stop: threading.Event) -> None:
        """Check now, then every ``interval`` (every ``retry`` while failing)."""
        while not stop.is_set():
            ok = self.check()
            stop.wait(self.interval if ok else self.retry)
