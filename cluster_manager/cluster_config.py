"""What an Edge cluster configuration entry may hold: checked before anything is created for
it, by the cluster API (which refuses with 422) and by the reconciler (which records Failed)."""

from __future__ import annotations

from typing import Any

from config_store.uuids import is_uuid
from kubenames import LABEL_MAX, is_dns1123_label

ALLOWED_KEYS = {"name", "namespace", "chart", "bare", "values"}


class InvalidConfig(ValueError):
    """An Edge cluster configuration entry that cannot be commissioned."""


def check_config(config: Any) -> dict[str, Any]:
    """The entry if it can be commissioned; otherwise :class:`InvalidConfig` saying why.

    ``name`` must be a DNS-1123 label (it names Kubernetes objects and principals, and is a
    valid Sparkplug group-id part because it has no ``+``, ``/`` or ``#``); so must
    ``namespace``.
    """
    if not isinstance(config, dict):
        raise InvalidConfig("the configuration must be a JSON object")
    unknown = set(config) - ALLOWED_KEYS
    if unknown:
        raise InvalidConfig(f"unknown keys: {', '.join(sorted(unknown))}")
    for key in ("name", "namespace"):
        value = config.get(key)
        if not is_dns1123_label(value):
            raise InvalidConfig(f"{key} must be a DNS-1123 label (lower-case letters, digits "
                                f"and '-', at most {LABEL_MAX} characters), not {value!r}")
    chart = config.get("chart")
    if "chart" in config and not is_uuid(chart):
        raise InvalidConfig("chart must be a Helm chart template UUID")
    if not isinstance(config.get("bare", False), bool):
        raise InvalidConfig("bare must be true or false")
    if not isinstance(config.get("values", {}), dict):
        raise InvalidConfig("values must be a JSON object")
    return config
