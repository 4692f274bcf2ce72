"""Edge deployments as ACS writes them: an object of the *Edge deployment* class, its Info
name, and its *Edge deployment* entry ``{name, cluster, chart, hostname?, values?,
dependsOn?, driftDetection?, createdAt?}`` (Edge Sync on the cluster turns the entry into a
HelmRelease; ``dependsOn`` and ``driftDetection`` are ours).

The one owner of that shape: the per-cluster deployment API and the fleet deployments'
expansion both write through :func:`write` and :func:`remove`. An entry made by a fleet
deployment also carries ``fleetDeployment: <its uuid>``, so nothing else overwrites it and
the expansion never touches a deployment a person made (:func:`owner`).

The request body of one deployment is ``{name, chart, hostname?: <a reported host> | null
(floating), values?, dependsOn?: [<deployment name>], driftDetection?: enabled | warn |
disabled}``; :func:`request_errors` names each refused field.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol, Required, TypedDict, cast

from fplus.config_store import uuids
from fplus.config_store.client import ConfigStoreClient
from fplus.config_store.uuids import is_uuid
from fplus.jsontypes import Doc, JsonObject, JsonValue, is_object, text

DEPLOYMENT_APP = uuids.App.EdgeDeployment
DEPLOYMENT_CLASS = uuids.Class.EdgeDeployment
FLEET_KEY = "fleetDeployment"
"""The entry field naming the fleet deployment that made (and owns) a deployment."""
NAME_MAX = 253
ORDER_KEYS = ("dependsOn", "driftDetection")
"""What a deployment and a fleet deployment may both say of order and drift."""
REQUEST_KEYS = {"name", "chart", "hostname", "values", *ORDER_KEYS}
DRIFT_MODES = ("enabled", "warn", "disabled")
"""helm-controller's drift detection modes (absent: the HelmRelease template's)."""


class DeploymentRequest(TypedDict, total=False):
    """A deployment's request body that :func:`request_errors` accepts whole."""

    name: Required[str]
    chart: Required[str]
    hostname: str | None
    """A host the cluster reported; None (or absent): floating."""
    values: JsonObject
    dependsOn: list[str]
    driftDetection: str


def request_errors(body: object, *, partial: bool = False) -> dict[str, str]:
    """Why a deployment request body is refused, by field (``{}``: it is well-formed).
    ``partial``: a merge-patch, where every field is optional. Whether the chart exists and
    the host is one the cluster reported is checked against the Config Store by the caller."""
    if not is_object(body):
        return {"": "a deployment must be a JSON object"}
    errors = shared_errors(body, REQUEST_KEYS, partial=partial)
    hostname = body.get("hostname")
    if hostname is not None and not (isinstance(hostname, str) and hostname):
        errors["hostname"] = "hostname must be a host the cluster reported, or null (floating)"
    if not isinstance(body.get("values", {}), dict):
        errors["values"] = "values must be a JSON object"
    return errors


def shared_errors(body: Doc, keys: set[str], *,
                  partial: bool = False) -> dict[str, str]:
    """The checks a deployment's and a fleet deployment's request share: no key outside
    ``keys``, a printable ``name``, a ``chart`` that is a UUID (each optional if
    ``partial``), and ``dependsOn`` and ``driftDetection`` well-formed if given."""
    errors: dict[str, str] = {}
    unknown = set(body) - keys
    if unknown:
        errors[""] = f"unknown keys: {', '.join(sorted(map(str, unknown)))}"
    if not partial or "name" in body:
        name = body.get("name")
        if not (isinstance(name, str) and 0 < len(name) <= NAME_MAX and name.isprintable()):
            errors["name"] = f"name must be printable text of 1 to {NAME_MAX} characters"
    if (not partial or "chart" in body) and not is_uuid(body.get("chart")):
        errors["chart"] = "chart must be a Helm chart template UUID"
    return errors | _order_errors(body, partial)


def _order_errors(body: Doc, partial: bool) -> dict[str, str]:
    """``dependsOn`` (distinct deployment names) and ``driftDetection`` (a mode), if given
    (null in a merge-patch: removed)."""
    errors: dict[str, str] = {}
    needs = body.get("dependsOn", [])
    if partial and needs is None:
        needs = []
    if not (isinstance(needs, list) and all(
            isinstance(n, str) and 0 < len(n) <= NAME_MAX and n.isprintable() for n in needs)):
        errors["dependsOn"] = "dependsOn must be a list of deployment names"
    elif len(set(needs)) != len(needs):
        errors["dependsOn"] = "dependsOn names a deployment twice"
    drift = body.get("driftDetection")
    if "driftDetection" in body and drift not in DRIFT_MODES and not (partial and drift is None):
        errors["driftDetection"] = f"driftDetection must be one of {', '.join(DRIFT_MODES)}"
    return errors


@dataclass(frozen=True)
class Deployment:
    """One Edge deployment entry, as stored."""

    uuid: str
    name: str
    cluster: str
    chart: str
    hostname: str | None = None
    values: Mapping[str, JsonValue] | None = None
    fleet: str | None = None
    created_at: str | None = None
    depends_on: tuple[str, ...] = ()
    """The names of the cluster's deployments it is installed after."""
    drift: str | None = None
    """Its drift detection mode (None: the HelmRelease template's)."""

    def entry(self) -> JsonObject:
        """The Edge deployment entry (ACS's fields; ``hostname`` absent when floating)."""
        entry: JsonObject = {"name": self.name, "cluster": self.cluster,
                                 "chart": self.chart}
        if self.hostname is not None:
            entry["hostname"] = self.hostname
        if self.values:
            entry["values"] = dict(self.values)
        if self.depends_on:
            entry["dependsOn"] = list(self.depends_on)
        if self.drift is not None:
            entry["driftDetection"] = self.drift
        if self.fleet is not None:
            entry[FLEET_KEY] = self.fleet
        entry["createdAt"] = self.created_at or _now()
        return entry

    @classmethod
    def parse(cls, uuid: str, entry: object) -> Deployment | None:
        """The deployment an entry holds (ACS's legacy one-element ``charts`` list read as its
        ``chart``); None when it is not one ACS could deploy as one chart."""
        if not is_object(entry):
            return None
        if "chart" not in entry:
            charts = entry.get("charts")
            if isinstance(charts, list) and len(charts) == 1:
                entry = {**entry, "chart": charts[0]}
        name, cluster, chart = (text(entry, k) for k in ("name", "cluster", "chart"))
        if name is None or cluster is None or chart is None:
            return None
        values = entry.get("values")
        return cls(uuid, name, cluster, chart, text(entry, "hostname"),
                   cast(JsonObject, values) if is_object(values) else None,
                   text(entry, FLEET_KEY), text(entry, "createdAt"), *ordering(entry))


def ordering(entry: Doc) -> tuple[tuple[str, ...], str | None]:
    """An entry's (deployment's or fleet deployment's) ``dependsOn`` and ``driftDetection``
    (none, None when absent)."""
    needs = entry.get("dependsOn")
    return (tuple(n for n in needs if isinstance(n, str)) if isinstance(needs, list) else (),
            text(entry, "driftDetection"))


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def owner(entry: object) -> str | None:
    """The fleet deployment that owns an entry; None for one a person made."""
    return text(entry, FLEET_KEY) if is_object(entry) else None


def write(cs: ConfigStoreClient, deployment: Deployment, *, if_match: str | None = None,
          new: bool = False) -> None:
    """Create (``new``) or replace a deployment: object, Info name and entry, as ACS does."""
    if new:
        cs.create_object(DEPLOYMENT_CLASS, deployment.uuid)
        cs.set_name(deployment.uuid, deployment.name)
        cs.put_config(DEPLOYMENT_APP, deployment.uuid, deployment.entry())
        return
    cs.put_config(DEPLOYMENT_APP, deployment.uuid, deployment.entry(), if_match=if_match)
    cs.set_name(deployment.uuid, deployment.name)


class Removing(Protocol):
    """What removing deployments needs of a Config Store client."""

    def search(self, app: str, query: Mapping[str, object]) -> list[str] | None: ...
    def delete_config(self, app: str, obj: str) -> None: ...
    def delete_object(self, obj: str) -> None: ...


def remove(cs: Removing, uuid: str) -> None:
    """Delete a deployment's entry and object (Edge Sync then uninstalls it)."""
    cs.delete_config(DEPLOYMENT_APP, uuid)
    cs.delete_object(uuid)


def remove_all_of_cluster(cs: Removing, cluster: str) -> list[str]:
    """Remove every deployment whose entry names ``cluster`` (well-formed or not); their
    uuids."""
    found = list(cs.search(DEPLOYMENT_APP, {"cluster": cluster}) or [])
    for uuid in found:
        remove(cs, uuid)
    return found


def of_cluster(cs: ConfigStoreClient, cluster: str) -> dict[str, Deployment]:
    """The cluster's deployments by uuid (as Edge Sync finds them: by ``cluster``)."""
    found: dict[str, Deployment] = {}
    for uuid in cs.search(DEPLOYMENT_APP, {"cluster": cluster}) or []:
        deployment = Deployment.parse(uuid, cs.get_config(DEPLOYMENT_APP, uuid))
        if deployment is not None and deployment.cluster == cluster:
            found[uuid] = deployment
    return found
