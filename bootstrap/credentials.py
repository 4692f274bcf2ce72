"""The credential Secrets the bootstrap script installs on the edge."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import yaml

from .errors import BootstrapError
from .names import check_dns1123_label, check_dns1123_subdomain

MANAGED_BY = {"app.kubernetes.io/managed-by": "fplus-cluster-manager"}


def _secret(namespace: str, name: str, credentials: object) -> dict[str, Any]:
    check_dns1123_subdomain(name, "Secret name")
    if not isinstance(credentials, tuple) or len(credentials) != 2 \
            or not all(isinstance(v, str) and v for v in credentials):
        raise BootstrapError(f"Secret {name}: expected (username, password), "
                             "two non-empty strings")
    username, password = credentials
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(MANAGED_BY)},
        "type": "Opaque",
        "stringData": {"username": username, "password": password},
    }


def credentials_manifest(namespace: str, secrets: Mapping[str, tuple[str, str]]) -> str:
    """Multi-document YAML: one Opaque Secret with ``username``/``password`` per entry."""
    check_dns1123_label(namespace, "namespace")
    if not isinstance(secrets, Mapping) or not secrets:
        raise BootstrapError("secrets must be a non-empty mapping of name to "
                             "(username, password)")
    docs = [_secret(namespace, name, creds) for name, creds in secrets.items()]
    # safe_dump quotes whatever a password holds; never fold long values over lines
    return yaml.safe_dump_all(docs, explicit_start=True, sort_keys=False,
                              allow_unicode=True, width=2**31 - 1)
