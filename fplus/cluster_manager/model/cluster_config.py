"""What an Edge cluster configuration entry may hold: checked before anything is created for
it, by the cluster API (which refuses with 422) and by the reconciler (which records Failed)."""

from __future__ import annotations

import re
from typing import Any

from fplus.config_store.uuids import is_uuid
from fplus.kubenames import LABEL_MAX, is_dns1123_label
from fplus.kubenames.labels import labels_errors

ALLOWED_KEYS = {"name", "namespace", "chart", "bare", "sealedSecrets", "fluxVersion", "values",
                "labels"}
FLUX_VERSION = re.compile(r"^v\d+\.\d+\.\d+([-+][0-9A-Za-z.-]+)?$")


class InvalidConfig(ValueError):
    """An Edge cluster configuration entry that cannot be commissioned."""


def config_errors(config: Any) -> dict[str, str]:
    """Why each field of an entry cannot be commissioned (``"": …`` for the whole entry);
    empty when it can. ``name`` and ``namespace`` must be DNS-1123 labels (they name
    Kubernetes objects and principals, and a label is a valid Sparkplug group-id part: no
    ``+``, ``/`` or ``#``)."""
    if not isinstance(config, dict):
        return {"": "the configuration must be a JSON object"}
    errors = {}
    unknown = set(config) - ALLOWED_KEYS
    if unknown:
        errors[""] = f"unknown keys: {', '.join(sorted(unknown))}"
    for key in ("name", "namespace"):
        value = config.get(key)
        if not is_dns1123_label(value):
            errors[key] = (f"{key} must be a DNS-1123 label (lower-case letters, digits and "
                           f"'-', at most {LABEL_MAX} characters), not {value!r}")
    if "chart" in config and not is_uuid(config.get("chart")):
        errors["chart"] = "chart must be a Helm chart template UUID"
    for flag in ("bare", "sealedSecrets"):
        if not isinstance(config.get(flag, False), bool):
            errors[flag] = f"{flag} must be true or false"
    if "fluxVersion" in config and not (isinstance(config["fluxVersion"], str)
                                        and FLUX_VERSION.match(config["fluxVersion"])):
        errors["fluxVersion"] = "fluxVersion must be a Flux version such as v2.7.5"
    if not isinstance(config.get("values", {}), dict):
        errors["values"] = "values must be a JSON object"
    if "labels" in config:
        errors |= labels_errors(config["labels"])
    return errors


def check_config(config: Any) -> dict[str, Any]:
    """The entry if it can be commissioned; otherwise :class:`InvalidConfig` with the first
    of :func:`config_errors`."""
    errors = config_errors(config)
    if errors:
        raise InvalidConfig(next(iter(errors.values())))
    return config
