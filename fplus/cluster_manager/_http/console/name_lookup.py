"""Names for the console's pages: clusters and Helm chart templates by uuid, and a name a
person typed resolved to the uuid the services take (a uuid is taken as it is)."""

from __future__ import annotations

from fplus.config_store import uuids

from ...model.apps_and_roles import CONFIG_APP
from ...services.charts.chart_templates import ChartService
from ..context import services


def cluster_names() -> dict[str, str]:
    """Every cluster's name by uuid: one Config Store search, whatever the fleet's size."""
    found = services().cs.search(CONFIG_APP, {}, {"name": "name"})
    if not isinstance(found, dict):
        return {}
    return {c: v["name"] for c, v in found.items()
            if isinstance(v, dict) and isinstance(v.get("name"), str)}


def chart_names() -> dict[str, str]:
    """Every Helm chart template's name by uuid."""
    return {c["uuid"]: name for c in ChartService(services().cs).templates()
            if (name := c["name"])}


def by_name(text: str, names: dict[str, str]) -> str | None:
    """``text`` as a uuid: itself if it is one, else the uuid ``names`` gives that name (None:
    no such name)."""
    text = text.strip()
    if uuids.is_uuid(text):
        return text.lower()
    return next((uuid for uuid, name in sorted(names.items()) if name == text), None)
