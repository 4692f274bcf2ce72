"""What an Edge cluster configuration entry may hold: checked before anything is created for
it, by the cluster API (which refuses with 422) and by the reconciler (which records Failed);
and which of its fields an edit may change (:func:`patched_config`)."""

from __future__ import annotations

import copy
import re
from collections.abc import Collection
from typing import TypedDict, cast

import json_merge_patch

from fplus.config_store.uuids import NULL, is_uuid
from fplus.jsontypes import Doc, JsonObject, is_object, string_map
from fplus.kubenames import LABEL_MAX, is_dns1123_label
from fplus.kubenames.labels import labels_errors, selector_matches

ALLOWED_KEYS = {"name", "namespace", "chart", "bare", "sealedSecrets", "fluxVersion", "values",
                "labels", "fluxTemplate"}
FLUX_VERSION = re.compile(r"^v\d+\.\d+\.\d+([-+][0-9A-Za-z.-]+)?$")


def with_v(version: object) -> object:
    """A Flux version in the ``v`` form it is stored in (``2.7.5`` -> ``v2.7.5``); anything
    else as it is (the checks refuse it)."""
    if isinstance(version, str) and FLUX_VERSION.match(f"v{version}"):
        return f"v{version}"
    return version


def with_v_field(doc: object) -> object:
    """``doc`` with its ``fluxVersion`` (if any) in the ``v`` form (a copy; else as it is)."""
    if not is_object(doc) or "fluxVersion" not in doc:
        return doc
    return dict(doc) | {"fluxVersion": with_v(doc["fluxVersion"])}


EDITABLE = ("values", "chart", "fluxVersion", "sealedSecrets", "labels", "fluxTemplate")
"""The fields an edit (``PATCH /v1/cluster/<c>``) may change."""
FIXED = {
    "name": "a cluster's name is fixed: its principals (op1flux/<name>, op1sync/<name>) and "
            "its repo path embed it; create a new cluster instead",
    "namespace": "a cluster's namespace is fixed: the bootstrap script installed the edge's "
                 "credentials, Flux objects and Edge Sync in it",
    "bare": "bare is fixed: switching it would make the repo drop, or start managing, the "
            "edge's own Flux installation",
}
"""The fields fixed at creation, and why."""


class ClusterConfig(TypedDict, total=False):
    """An Edge cluster configuration entry :func:`check_config` accepted (``name`` and
    ``namespace`` always there; an empty one stands for none checked yet)."""

    name: str
    namespace: str
    chart: str
    """A Helm chart template's uuid."""
    bare: bool
    sealedSecrets: bool
    fluxVersion: str
    values: JsonObject
    labels: dict[str, str]
    fluxTemplate: str
    """A Flux template's uuid (the cluster is pinned to it)."""


class InvalidConfig(ValueError):
    """An Edge cluster configuration entry that cannot be commissioned (``field``: the one
    named, empty for the whole entry)."""

    def __init__(self, message: str, field: str = "") -> None:
        super().__init__(message)
        self.field = field


def config_errors(config: object) -> dict[str, str]:
    """Why each field of an entry cannot be commissioned (``"": …`` for the whole entry);
    empty when it can. ``name`` and ``namespace`` must be DNS-1123 labels (they name
    Kubernetes objects and principals, and a label is a valid Sparkplug group-id part: no
    ``+``, ``/`` or ``#``)."""
    if not is_object(config):
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
    if "fluxTemplate" in config and (not is_uuid(config["fluxTemplate"])
                                     or config["fluxTemplate"] == NULL):
        errors["fluxTemplate"] = ("fluxTemplate must be the UUID of an entry in the Flux "
                                  "template app (the cluster's pinned template; null in an "
                                  "edit: the default), not the nil UUID")
    for flag in ("bare", "sealedSecrets"):
        if not isinstance(config.get(flag, False), bool):
            errors[flag] = f"{flag} must be true or false"
    version = config.get("fluxVersion")
    if "fluxVersion" in config and not (isinstance(version, str)
                                        and FLUX_VERSION.match(version)):
        errors["fluxVersion"] = "fluxVersion must be a Flux version such as v2.7.5"
    if not isinstance(config.get("values", {}), dict):
        errors["values"] = "values must be a JSON object"
    if "labels" in config:
        errors |= labels_errors(config["labels"])
    return errors


def check_config(config: object) -> ClusterConfig:
    """The entry if it can be commissioned; otherwise :class:`InvalidConfig` with the first
    of :func:`config_errors`."""
    errors = config_errors(config)
    if errors or not is_object(config):
        field, message = next(iter(errors.items()))
        named = not field or message.startswith(field)
        raise InvalidConfig(message if named else f"{field}: {message}", field)
    return cast(ClusterConfig, config)  # config_errors checked every field


def patched_config(current: Doc, patch: object) -> ClusterConfig:
    """``current`` with the RFC 7386 merge-patch ``patch`` applied, checked by
    :func:`check_config`; :class:`InvalidConfig` naming the field when ``patch`` is no
    object, names a field outside :data:`EDITABLE` (a fixed field may only repeat its
    current value) or makes an entry that cannot be commissioned."""
    if not is_object(patch):
        raise InvalidConfig("the patch must be a JSON object of the fields to change")
    for field in patch:
        if field in FIXED:
            if patch[field] != current.get(field):
                raise InvalidConfig(f"{field}: {FIXED[field]}", field)
        elif field not in EDITABLE:
            raise InvalidConfig(f"{field}: not a field an edit may change (only "
                                f"{', '.join(EDITABLE)})", str(field))
    return check_config(json_merge_patch.merge(copy.deepcopy(dict(current)), patch))


def targeted(configs: Doc, selector: Doc | None,
             listed: Collection[str] = (), *, every: bool = False) -> list[str]:
    """The configured clusters (sorted) that are ``listed``, or whose ``labels`` the
    ``selector`` matches, or all of them if ``every``."""
    found = []
    for cluster, config in configs.items():
        if not is_object(config):
            continue
        labels = string_map(config.get("labels"))
        if every or cluster in listed or (selector is not None
                                          and selector_matches(selector, labels)):
            found.append(cluster)
    return sorted(found)

