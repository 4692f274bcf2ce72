"""An Edge deployment entry, checked once where it is read.

The Cluster Manager writes the entry (``name``, ``chart`` or the deprecated ``charts``,
``hostname``, ``values``, ``cluster``, ``dependsOn``, ``driftDetection``); Edge Sync does not
trust it: :func:`parse` turns it into a :class:`Deployment` or says, as a
:class:`RenderError`, why it cannot be deployed.
"""

from __future__ import annotations

from dataclasses import dataclass

from fplus.config_store.uuids import is_uuid
from fplus.jsontypes import Doc, is_object

DRIFT_MODES = ("enabled", "warn", "disabled")
"""helm-controller's ``spec.driftDetection.mode`` values."""


class RenderError(ValueError):
    """One deployment cannot be turned into manifests."""


@dataclass(frozen=True)
class Deployment:
    """What one Edge deployment entry asks for."""

    name: str
    charts: tuple[str, ...]
    """Its Helm chart template(s)."""
    hostname: str | None
    """The host it is pinned to (None: the entry names none)."""
    values: Doc
    """Helm values over the chart's."""
    depends_on: tuple[str, ...] = ()
    """The names of the cluster's deployments it is installed after."""
    drift: str | None = None
    """helm-controller's drift detection mode (None: the template's)."""


def chart_uuids(spec: Doc) -> list[str]:
    """The deployment's chart template(s): ``chart``, else the deprecated ``charts`` list."""
    if "chart" in spec:
        charts = [spec["chart"]]
    elif "charts" in spec:
        found = spec["charts"]
        charts = list(found) if isinstance(found, list) else [found]
    else:
        raise RenderError("the entry names no chart")
    uuids = [chart for chart in charts if isinstance(chart, str) and is_uuid(chart)]
    if not charts or len(uuids) != len(charts):
        raise RenderError(f"chart must be a Helm chart template UUID, not {charts!r}")
    return uuids


def parse(entry: object) -> Deployment:
    """The entry as a :class:`Deployment`; :class:`RenderError` if it is malformed."""
    if not is_object(entry):
        raise RenderError("the entry is not a JSON object")
    name = entry.get("name")
    if not isinstance(name, str) or not name:
        raise RenderError("the entry has no name")
    hostname = entry.get("hostname")
    if "hostname" in entry and not isinstance(hostname, str):
        raise RenderError("hostname must be a string")
    values = entry.get("values", {})
    if not is_object(values):
        raise RenderError("values must be an object")
    needs = entry.get("dependsOn", [])
    if not (isinstance(needs, list) and all(isinstance(n, str) and n for n in needs)):
        raise RenderError("dependsOn must be a list of deployment names")
    drift = entry.get("driftDetection")
    if drift is not None and drift not in DRIFT_MODES:
        raise RenderError(f"driftDetection must be one of {', '.join(DRIFT_MODES)}")
    return Deployment(name, tuple(chart_uuids(entry)),
                      hostname if isinstance(hostname, str) else None, values,
                      tuple(needs), drift if isinstance(drift, str) else None)
