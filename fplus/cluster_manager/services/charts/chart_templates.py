"""Helm chart templates as the deployment API shows them, and their deletion while unused.

A chart template is an entry of the Helm chart template app (its object's Info name names it);
the members of the *System Helm chart* class (the edge-cluster chart the Cluster Manager
renders into every repo) are marked ``system``. Deleting a template that Edge deployments use
is refused with them named, and so is deleting a system chart; an unused one is deleted with
the caller's own Config Store credentials (the Cluster Manager cannot write chart templates:
edges run them). Creating a template for an imported chart (``POST /v1/chart?template=``) is
done with the caller's credentials too.
"""

from __future__ import annotations

import logging
from typing import NotRequired, TypedDict

from fplus.config_store import uuids
from fplus.config_store.client import ConfigStoreClient
from fplus.config_store.client import Forbidden as WriteRefused
from fplus.jsontypes import JsonValue

from ...model import edge_deployments as model
from ..errors import BadRequest, Conflict, Forbidden, NotFound

log = logging.getLogger(__name__)
TEMPLATE_APP = uuids.App.HelmChartTemplate
NAME_MAX = 100
"""The longest chart template name."""


class ChartTemplate(TypedDict):
    """A Helm chart template as :meth:`ChartService.templates` lists it."""

    uuid: str
    name: str | None
    chart: JsonValue
    source: NotRequired[str]
    system: bool
    """A system chart's (the Cluster Manager's own, never deployed by a person)."""


class ChartService:
    """List Helm chart templates; delete one nobody uses."""

    def __init__(self, cs: ConfigStoreClient) -> None:
        self.cs = cs

    def _system(self) -> set[str]:
        return set(self.cs.class_members(uuids.Class.SystemHelmChart))

    def templates(self) -> list[ChartTemplate]:
        """``{uuid, name, chart, source?, system}`` of every template, by name."""
        system = self._system()
        found = []
        for chart in self.cs.list_app_objects(TEMPLATE_APP):
            entry = self.cs.get_config(TEMPLATE_APP, chart)
            if not isinstance(entry, dict):
                continue
            info = self.cs.get_config(uuids.App.Info, chart)
            name = info.get("name") if isinstance(info, dict) else None
            shown = ChartTemplate(uuid=chart, name=name if isinstance(name, str) else None,
                                  chart=entry.get("chart"), system=chart in system)
            if isinstance(source := entry.get("source"), str):
                shown["source"] = source
            found.append(shown)
        return sorted(found, key=lambda c: (c["name"] or "", c["uuid"]))

    def check_new_name(self, name: str) -> None:
        """400 for an unusable template name, 409 if a template has it already."""
        if not name.strip() or len(name) > NAME_MAX or not name.isprintable():
            raise BadRequest(f"template: a chart template name is 1 to {NAME_MAX} printable "
                             "characters")
        same = [c["uuid"] for c in self.templates() if c["name"] == name]
        if same:
            raise Conflict(f"template: a chart template named {name!r} exists ({same[0]})")

    def create(self, name: str, chart: str, writer: ConfigStoreClient) -> str:
        """A new template ``name`` of ``chart`` (object, Info name, entry) written as
        ``writer`` (the caller); 403, with nothing left behind, if the Config Store refuses."""
        try:
            template = writer.create_object(uuids.Class.HelmChart)
        except WriteRefused:
            raise Forbidden("the Config Store refuses you creating a Helm chart template "
                            "object, which ?template= takes") from None
        try:
            writer.put_config(uuids.App.Info, template, {"name": name})
            writer.put_config(TEMPLATE_APP, template, {"chart": chart, "values": {}})
        except WriteRefused:
            self.discard(template, writer)
            raise Forbidden("the Config Store refuses you WriteApp on the Info or Helm chart "
                            "template app, which ?template= takes") from None
        log.info("chart template %s (%s) created for chart %s", template, name, chart)
        return template

    def discard(self, template: str, writer: ConfigStoreClient) -> None:
        """Delete a template just made (best effort: a failure is logged)."""
        try:
            writer.delete_config(TEMPLATE_APP, template)
            writer.delete_object(template)
        except Exception as exc:  # the refusal being answered matters more
            log.warning("chart template %s left behind: %s", template, exc)

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
