"""Helm chart templates as the deployment API shows them, and their deletion while unused.

A chart template is an entry of the Helm chart template app (its object's Info name names it);
the members of the *System Helm chart* class (the edge-cluster chart the Cluster Manager
renders into every repo) are marked ``system``. Deleting a template that Edge deployments use
is refused with them named, and so is deleting a system chart; an unused one is deleted with
the caller's own Config Store credentials (the Cluster Manager cannot write chart templates:
edges run them).
"""

from __future__ import annotations

import logging
from typing import Any

from fplus.config_store import uuids
from fplus.config_store.client import ConfigStoreClient
from fplus.config_store.client import Forbidden as WriteRefused

from ..model import edge_deployments as model
from .errors import Conflict, Forbidden, NotFound

log = logging.getLogger(__name__)
TEMPLATE_APP = uuids.App.HelmChartTemplate


class ChartService:
    """List Helm chart templates; delete one nobody uses."""

    def __init__(self, cs: ConfigStoreClient) -> None:
        self.cs = cs

    def _system(self) -> set[str]:
        return set(self.cs.class_members(uuids.Class.SystemHelmChart))

    def templates(self) -> list[dict[str, Any]]:
        """``{uuid, name, chart, source?, system}`` of every template, by name."""
        system = self._system()
        found = []
        for chart in self.cs.list_app_objects(TEMPLATE_APP):
            entry = self.cs.get_config(TEMPLATE_APP, chart)
            if not isinstance(entry, dict):
                continue
            info = self.cs.get_config(uuids.App.Info, chart)
            name = info.get("name") if isinstance(info, dict) else None
            shown: dict[str, Any] = {"uuid": chart, "name": name if isinstance(name, str)
                                     else None, "chart": entry.get("chart")}
            if isinstance(entry.get("source"), str):
                shown["source"] = entry["source"]
            shown["system"] = chart in system
            found.append(shown)
        return sorted(found, key=lambda c: (c["name"] or "", c["uuid"]))

    def users(self, chart: str) -> list[dict[str, str]]:
        """``{uuid, name, cluster}`` of the deployments that use ``chart``."""
        found = []
        for deployment in self.cs.search(model.DEPLOYMENT_APP, {"chart": chart}) or []:
            parsed = model.Deployment.parse(
                deployment, self.cs.get_config(model.DEPLOYMENT_APP, deployment))
            if parsed is not None and parsed.chart == chart:
                found.append({"uuid": parsed.uuid, "name": parsed.name,
                              "cluster": parsed.cluster})
        return sorted(found, key=lambda d: (d["cluster"], d["name"], d["uuid"]))

    def delete(self, chart: str, writer: ConfigStoreClient) -> None:
        """Delete the template entry as ``writer`` (the caller); 404 if there is none, 409
        if it is a system chart or deployments use it (named)."""
        if self.cs.get_config(TEMPLATE_APP, chart) is None:
            raise NotFound(f"no Helm chart template {chart}")
        if chart in self._system():
            raise Conflict(f"chart template {chart} is a system chart (the Cluster Manager "
                           "renders it into every cluster's repo)")
        users = self.users(chart)
        if users:
            named = ", ".join(f"{u['name']} ({u['uuid']}) on cluster {u['cluster']}"
                              for u in users[:20])
            more = f" and {len(users) - 20} more" if len(users) > 20 else ""
            raise Conflict(f"chart template {chart} is used by {len(users)} deployment(s): "
                           f"{named}{more}; delete or move them first")
        try:
            writer.delete_config(TEMPLATE_APP, chart)
        except WriteRefused:
            raise Forbidden("the Config Store refuses you WriteApp on the Helm chart "
                            "template app, which deleting a template takes") from None
        log.info("chart template %s deleted", chart)
