"""The credential Secrets the bootstrap script installs on the edge."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import yaml

from fplus.kubenames import checked, is_dns1123_label, is_dns1123_subdomain

from .errors import BootstrapError

MANAGED_BY = {"app.kubernetes.io/managed-by": "fplus-cluster-manager"}
_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
"""libyaml's safe dumper when the wheel has it (the same text, a tenth of the CPU)."""


def _secret(namespace: str, name: str, credentials: object,
            ca: str | None) -> dict[str, Any]:
    checked(name, is_dns1123_subdomain,
            lambda: BootstrapError(f"Secret name {name!r} is not a DNS-1123 subdomain"))
    if not isinstance(credentials, tuple) or len(credentials) != 2 \
            or not all(isinstance(v, str) and v for v in credentials):
        raise BootstrapError(f"Secret {name}: expected (username, password), "
                             "two non-empty strings")
    username, password = credentials
    data = {"username": username, "password": password}
    if ca is not None:
        data["ca.crt"] = ca
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(MANAGED_BY)},
        "type": "Opaque",
        "stringData": data,
    }


def credentials_manifest(namespace: str, secrets: Mapping[str, tuple[str, str]],
                         ca: str | None = None) -> str:
    """Multi-document YAML: one Opaque Secret with ``username``/``password`` per entry, and
    ``ca.crt`` (PEM) in each when ``ca`` is given: Flux's GitRepository reads it from its
    ``secretRef`` Secret to verify a private CA, Edge Sync from its mounted Secret."""
    checked(namespace, is_dns1123_label,
            lambda: BootstrapError(f"namespace {namespace!r} is not a DNS-1123 label"))
    if ca is not None and (not isinstance(ca, str) or "-----BEGIN CERTIFICATE-----" not in ca):
        raise BootstrapError("ca must be PEM certificate text")
    if not isinstance(secrets, Mapping) or not secrets:
        raise BootstrapError("secrets must be a non-empty mapping of name to "
                             "(username, password)")
    docs = [_secret(namespace, name, creds, ca) for name, creds in secrets.items()]
    # safe_dump quotes whatever a password holds; never fold long values over lines
    return yaml.dump_all(docs, Dumper=_DUMPER, explicit_start=True, sort_keys=False,
                         allow_unicode=True, width=2**31 - 1)
