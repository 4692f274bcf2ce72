"""Fleet deployments: one application for many clusters (the *Fleet deployment* app).

An entry is ``{name, chart, values?, selector?: {matchLabels?, matchExpressions?},
clusters?: [cluster uuid], customizations?: [{selector, values}], profiles?: {<name>: values},
profileLabel?, overrides?: {<cluster uuid>: values}, rollout?, createdAt?,
rolloutRequest?}``. It targets
every cluster whose labels match ``selector`` (Kubernetes semantics: ``{}`` matches every
cluster) and every cluster listed in ``clusters``; it needs at least one of the two. On each
it wants one Edge deployment named ``name`` of ``chart``, its values those
:func:`..model.deployment_values.cluster_values` gives the cluster (``values``, the
matching ``customizations``, the cluster's profile, its ``overrides``; placeholders of the
cluster resolved), owned by the fleet deployment
(:mod:`.edge_deployments`'s ``fleetDeployment``) and kept at the uuid :func:`member_uuid`
gives, so however often and by whichever leader it is expanded there is only ever one.
With ``rollout`` a change of its :func:`revision` reaches the clusters step by step
(:mod:`.rule`);
``rolloutRequest: {action, rolloutId, at}`` is the API's pause, resume or abort of it.

This module owns the shape: :func:`request_errors` names each refused field of a request
body, :class:`Fleet` is an entry as stored.
"""

from __future__ import annotations

import hashlib
import json
import uuid as uuidlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Required, TypedDict, cast

from fplus.config_store import uuids
from fplus.config_store.uuids import is_uuid
from fplus.jsontypes import (
    Doc,
    JsonObject,
    JsonValue,
    as_list,
    as_object,
    is_object,
)
from fplus.kubenames.labels import selector_errors

from ..model.deployment_values import (
    LAYER_KEYS,
    ClusterMeta,
    Customization,
    cluster_values,
    layer_errors,
)
from ..model.edge_deployments import ORDER_KEYS, ordering, shared_errors
from .steps import Spec, spec_errors

FLEET_APP = uuids.App.FleetDeployment
FLEET_CLASS = uuids.Class.FleetDeployment
KEYS = {"name", "chart", "values", "selector", "clusters", "overrides", "rollout", *LAYER_KEYS,
        *ORDER_KEYS}
"""What a request may set (``createdAt`` and ``rolloutRequest`` are the Cluster Manager's)."""
INTERNAL = {"createdAt", "rolloutRequest"}
REVISION_KEYS = ("name", "chart", "values", "overrides", *LAYER_KEYS, *ORDER_KEYS)
"""What a fleet deployment's rollout carries to the clusters."""
MEMBER_NAMESPACE = uuidlib.UUID("3f1d4b0e-58c4-4a8e-9d6b-6f0c2f9b7a21")
"""The uuid5 namespace of the Edge deployments fleet deployments make."""


def member_uuid(fleet: str, cluster: str) -> str:
    """The one Edge deployment ``fleet`` may have on ``cluster``: the same on every leader
    and after every restart."""
    return str(uuidlib.uuid5(MEMBER_NAMESPACE, f"{fleet}/{cluster}"))


def revision(entry: Doc) -> str:
    """The digest of what a rollout carries to the clusters (a field added since the first
    four counts only when set, so an entry that sets none keeps the digest it had)."""
    body = {k: entry.get(k) or None for k in REVISION_KEYS
            if k in REVISION_KEYS[:4] or entry.get(k)}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:16]


def request_errors(body: object, *, partial: bool = False) -> dict[str, str]:
    """Why a fleet deployment body is refused, by field (``{}``: it is well-formed).
    ``partial``: a merge-patch whose fields are all optional (the result is checked whole
    too). Whether the chart and the listed clusters exist is the caller's to check."""
    if not is_object(body):
        return {"": "a fleet deployment must be a JSON object"}
    errors = shared_errors(body, KEYS | (INTERNAL if partial else set()), partial=partial)
    if not isinstance(body.get("values", {}), dict):
        errors["values"] = "values must be a JSON object"
    if "selector" in body:
        errors |= selector_errors(body["selector"])
    clusters = body.get("clusters", [])
    if not isinstance(clusters, list) or not all(is_uuid(c) for c in clusters):
        errors["clusters"] = "clusters must be a list of cluster UUIDs"
    elif len(set(clusters)) != len(clusters):
        errors["clusters"] = "clusters lists a cluster twice"
    errors |= _override_errors(body.get("overrides", {}))
    errors |= layer_errors(body)
    if "rollout" in body and not (partial and body["rollout"] is None):  # null: removed
        errors |= spec_errors(body["rollout"])
    if not partial and "selector" not in body and not clusters:
        errors["selector"] = "a fleet deployment needs a selector, clusters, or both"
    return errors


def _override_errors(overrides: object) -> dict[str, str]:
    if not is_object(overrides):
        return {"overrides": "overrides must be an object of cluster UUIDs to values objects"}
    errors = {}
    for cluster, values in overrides.items():
        if not is_uuid(cluster):
            errors[f"overrides.{cluster}"] = f"{cluster!r} is not a cluster UUID"
        elif not isinstance(values, dict):
            errors[f"overrides.{cluster}"] = "the values of a cluster must be a JSON object"
    return errors


class FleetEntry(TypedDict, total=False):
    """An entry of the Fleet deployment app that :func:`request_errors` accepts."""

    name: Required[str]
    chart: Required[str]
    values: JsonObject
    selector: JsonObject
    clusters: list[str]
    overrides: dict[str, JsonObject]
    customizations: list[JsonObject]
    profiles: dict[str, JsonObject]
    profileLabel: str
    rollout: JsonObject | None
    createdAt: JsonValue
    rolloutRequest: JsonValue


@dataclass(frozen=True)
class Fleet:
    """A fleet deployment entry, as stored and checked."""

    uuid: str
    name: str
    chart: str
    values: Mapping[str, JsonValue] = field(default_factory=dict)
    selector: Doc | None = None
    clusters: tuple[str, ...] = ()
    overrides: Mapping[str, Mapping[str, JsonValue]] = field(default_factory=dict)
    created_at: str = ""
    rollout: Spec | None = None
    """Its rollout's plan (None: every cluster at once)."""
    request: Doc | None = None
    revision: str = ""
    customizations: tuple[Customization, ...] = ()
    profiles: Mapping[str, Mapping[str, JsonValue]] = field(default_factory=dict)
    profile_label: str = ""
    depends_on: tuple[str, ...] = ()
    """``dependsOn``: carried into each of its Edge deployments."""
    drift: str | None = None
    """``driftDetection``: carried into each of its Edge deployments."""

    @classmethod
    def parse(cls, uuid: str, found: object) -> Fleet | str:
        """The fleet deployment an entry holds, or why it cannot be expanded."""
        errors = request_errors(
            {k: v for k, v in found.items() if k not in INTERNAL}
            if is_object(found) else found)
        if errors or not is_object(found):
            field_, why = next(iter(errors.items()))
            return f"{field_}: {why}" if field_ else why
        entry = cast(FleetEntry, found)  # every field it names was checked
        created, request = entry.get("createdAt"), entry.get("rolloutRequest")
        return cls(uuid, entry["name"], entry["chart"], entry.get("values") or {},
                   entry.get("selector"), tuple(entry.get("clusters") or ()),
                   entry.get("overrides") or {}, created if isinstance(created, str) else "",
                   None if (rollout := entry.get("rollout")) is None else Spec.parse(rollout),
                   request if isinstance(request, dict) else None,
                   revision(entry), *layers(entry), *ordering(entry))

    def values_for(self, cluster: ClusterMeta) -> JsonObject:
        """The values of its deployment on ``cluster``;
        :class:`..model.deployment_values.ValuesError` if a placeholder has no value there."""
        return cluster_values(self, cluster)


def layers(entry: Mapping[str, object]) -> tuple[tuple[Customization, ...],
                                                 dict[str, JsonObject], str]:
    """An entry's (checked) ``customizations``, ``profiles`` and ``profileLabel``."""
    customs = tuple(Customization(as_object(c.get("selector")),
                                  cast(JsonObject, as_object(c.get("values"))))
                    for c in map(as_object, as_list(entry.get("customizations"))))
    profiles = {k: cast(JsonObject, as_object(v))
                for k, v in as_object(entry.get("profiles")).items()}
    label = entry.get("profileLabel")
    return customs, profiles, label if isinstance(label, str) else ""
