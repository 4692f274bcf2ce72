"""A cluster's values of a deployment: one precedence, then the cluster's own metadata.

:func:`cluster_values` gives the values a fleet deployment's Edge deployment on one cluster
holds. The layers, lowest first (objects merge key by key, anything else is replaced):

1. the chart's defaults (the Helm chart template's ``values``; merged on the edge, unchanged);
2. the fleet deployment's ``values``;
3. every one of its ``customizations`` whose ``selector`` matches the cluster's labels, all
   of them, in list order (a later one wins);
4. the one of its ``profiles`` the cluster's label ``profileLabel`` (default ``profile``)
   names (no such label: none; a name it lacks: that cluster fails);
5. ``overrides[<cluster uuid>]``.

Then :func:`resolve` fills the placeholders (json-templates syntax: ``{{key}}``,
``{{key:default}}``; a string that is one placeholder keeps the value's type) from the
cluster: ``cluster.uuid``, ``cluster.name``, ``cluster.namespace``, ``cluster.labels`` and
``cluster.labels.<key>`` (the rest of the path is the key, dots and slashes included), and
``hostname`` for a host-pinned deployment. Any other placeholder is left as written (a Helm
``tpl`` string; ACS's ``{{uuid}}``, ``{{name}}``, ``{{hostname}}`` belong to the Helm chart
templates Edge Sync renders). A placeholder of the cluster with no value and no default is a
:class:`ValuesError` naming it.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from fplus.jsontypes import Doc, JsonObject, JsonValue, as_object, is_object, string_map
from fplus.kubenames.labels import is_label_key, is_label_value, selector_errors, selector_matches
from fplus.templating import KEEP, MISSING, placeholders, render_with

PROFILE_LABEL = "profile"
"""The label naming a cluster's profile when a fleet deployment sets no ``profileLabel``."""
CLUSTER_FIELDS = ("uuid", "name", "namespace")
"""``cluster.<field>`` a placeholder may read (besides ``cluster.labels``)."""
LAYER_KEYS = ("customizations", "profiles", "profileLabel")
_LABEL = "cluster.labels."
"""The request fields of the layers between ``values`` and ``overrides``."""


class ValuesError(ValueError):
    """A placeholder of the cluster with no value and no default (the message names it)."""


@dataclass(frozen=True)
class ClusterMeta:
    """What a cluster's placeholders read."""

    uuid: str
    name: str = ""
    namespace: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)
    hostname: str | None = None

    @classmethod
    def of(cls, uuid: str, config: object, hostname: str | None = None) -> ClusterMeta:
        """The metadata of cluster ``uuid`` from its configuration entry."""
        found = as_object(config)
        return cls(uuid, str(found.get("name") or ""), str(found.get("namespace") or ""),
                   string_map(found.get("labels")), hostname)


@dataclass(frozen=True)
class Customization:
    """Values for the clusters a selector matches."""

    selector: Doc
    values: Mapping[str, JsonValue]


class Layered(Protocol):
    """What :func:`cluster_values` reads of a fleet deployment."""

    @property
    def values(self) -> Mapping[str, JsonValue]: ...
    @property
    def customizations(self) -> Sequence[Customization]: ...
    @property
    def profiles(self) -> Mapping[str, Mapping[str, JsonValue]]: ...
    @property
    def profile_label(self) -> str: ...
    @property
    def overrides(self) -> Mapping[str, Mapping[str, JsonValue]]: ...


def merge_values(base: Mapping[str, JsonValue], over: Mapping[str, JsonValue]) -> JsonObject:
    """``over`` merged into ``base``: objects key by key, anything else replaced (``over``'s
    values are shared, not copied: :func:`resolve` copies)."""
    out = dict(base)
    for key, value in over.items():
        if isinstance(mine := out.get(key), dict) and isinstance(value, dict):
            out[key] = merge_values(mine, value)
        else:
            out[key] = value
    return out


def cluster_values(fleet: Layered, meta: ClusterMeta) -> JsonObject:
    """The values of ``fleet``'s deployment on the cluster ``meta`` describes, by the
    precedence above, placeholders resolved; :class:`ValuesError` if it cannot have them."""
    values = dict(fleet.values)
    for custom in fleet.customizations:
        if selector_matches(custom.selector, meta.labels):
            values = merge_values(values, custom.values)
    if fleet.profiles:
        label = fleet.profile_label or PROFILE_LABEL
        chosen = meta.labels.get(label)
        if chosen is not None:
            if chosen not in fleet.profiles:
                raise ValuesError(
                    f"profiles: the cluster's label {label}={chosen} names no profile of this "
                    f"fleet deployment (it has {', '.join(sorted(fleet.profiles))})")
            values = merge_values(values, fleet.profiles[chosen])
    values = merge_values(values, fleet.overrides.get(meta.uuid) or {})
    return resolve(values, meta)


def resolve(values: Mapping[str, JsonValue], meta: ClusterMeta) -> JsonObject:
    """``values`` (a copy) with the cluster's placeholders filled in."""
    def answer(spec: str) -> Any:
        parsed = _parsed(spec)
        if parsed is None:
            return KEEP
        path, default = parsed
        found = _lookup(path, meta)
        if found is not MISSING:
            return found
        if default is not None:
            return default
        raise ValuesError(f"values: {{{{{spec}}}}} has no value on this cluster and no "
                          f"default (write {{{{{path}:<default>}}}} or set it)")

    rendered = render_with(dict(values), answer)
    return rendered if isinstance(rendered, dict) else {}


def _is_central(path: str) -> bool:
    return path in ("cluster", "hostname") or path.startswith("cluster.")


@functools.lru_cache(maxsize=4096)
def _parsed(spec: str) -> tuple[str, str | None] | None:
    """A placeholder's path and default (None: it has none); None if it is not the
    cluster's (parsed once: every cluster of a fleet deployment reads the same ones)."""
    key, sep, default = spec.partition(":")
    path = key.strip()
    if not _is_central(path):
        return None
    return path, default.strip() if sep else None


def _lookup(path: str, meta: ClusterMeta) -> Any:
    if path.startswith(_LABEL):
        return meta.labels.get(path[len(_LABEL):], MISSING)
    if path == "hostname":
        return MISSING if meta.hostname is None else meta.hostname
    rest = path.removeprefix("cluster").removeprefix(".")
    if rest in CLUSTER_FIELDS:
        return getattr(meta, rest)
    if rest == "labels":
        return dict(meta.labels)
    if rest == "":
        return {"uuid": meta.uuid, "name": meta.name, "namespace": meta.namespace,
                "labels": dict(meta.labels)}
    return MISSING


def template_errors(values: object, field_: str) -> dict[str, str]:
    """``{field_: why}`` if ``values`` reads something a cluster never has (``cluster.nmae``):
    a mistake every cluster would fail on."""
    for spec in sorted(placeholders(values)):
        path = spec.partition(":")[0].strip()
        if _is_central(path) and not _readable(path):
            return {field_: f"{{{{{spec}}}}}: a placeholder of the cluster reads "
                            f"cluster.uuid, cluster.name, cluster.namespace, "
                            f"cluster.labels.<key> or hostname"}
    return {}


def _readable(path: str) -> bool:
    rest = path.removeprefix("cluster").removeprefix(".")
    return (path == "hostname" or rest in (*CLUSTER_FIELDS, "labels", "")
            or rest.startswith("labels."))


def layer_errors(body: Doc) -> dict[str, str]:
    """Why a fleet deployment's ``values``, ``customizations``, ``profiles``,
    ``profileLabel`` and ``overrides`` are refused, by field (shape and placeholders)."""
    errors = template_errors(body.get("values"), "values")
    errors |= template_errors(body.get("overrides"), "overrides")
    customs = body.get("customizations", [])
    if not isinstance(customs, list):
        errors["customizations"] = "customizations must be a list of {selector, values}"
        customs = []
    for index, custom in enumerate(customs):
        where = f"customizations[{index}]"
        if not is_object(custom) or set(custom) != {"selector", "values"}:
            errors[where] = "a customization is {selector, values}"
            continue
        errors |= selector_errors(custom["selector"], f"{where}.selector")
        errors |= _values_errors(custom["values"], f"{where}.values")
    profiles = body.get("profiles", {})
    if not is_object(profiles):
        errors["profiles"] = "profiles must be an object of profile names to values objects"
        profiles = {}
    for name, values in profiles.items():
        if not (name and is_label_value(name)):
            errors[f"profiles.{name}"] = (f"{name!r} is not a profile name (a cluster names "
                                          "it in a label: a non-empty label value)")
        else:
            errors |= _values_errors(values, f"profiles.{name}")
    if "profileLabel" in body and not is_label_key(body["profileLabel"]):
        errors["profileLabel"] = "profileLabel must be a label key"
    return errors


def _values_errors(values: object, field_: str) -> dict[str, str]:
    if not isinstance(values, dict):
        return {field_: "values must be a JSON object"}
    return template_errors(values, field_)
