"""Commissioning and decommissioning one edge cluster (reference §3.4, §3.6).

Every step is idempotent and its progress is recorded in the Edge cluster setup status
entry, so an interrupted run is resumed (or simply repeated) by the next one. Unlike ACS,
spec and template changes reach clusters that are already ready, and decommissioning
leaves nothing behind.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from config_store import uuids
from config_store.client import ConfigStoreClient, Forbidden
from templating import render

from . import accounts
from .render import context, repo_content
from .repos import Repos
from .settings import FLUX_VERSION, Settings
from .validation import InvalidConfig, check_config

log = logging.getLogger(__name__)
STATUS = uuids.App.EdgeClusterSetupStatus


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def condition(kind: str, ok: bool, reason: str, message: str = "") -> dict[str, Any]:
    """A Kubernetes-style status condition."""
    return {"type": kind, "status": "True" if ok else "False", "reason": reason,
            "message": message, "lastTransitionTime": _now()}


class Commissioner:
    """Brings clusters to their configured state, or removes them."""

    def __init__(self, cs: ConfigStoreClient, settings: Settings,
                 service_config: dict[str, Any], repos: Repos) -> None:
        self.cs, self.settings, self.repos = cs, settings, repos
        groups = service_config["group"]
        self.groups = {"flux": groups["flux"]["uuid"], "sync": groups["sync"]["uuid"],
                       "cluster": groups["cluster"]["uuid"]}
        self.repo_path = groups["cluster"].get("path", "cluster")

    def _patch(self, cluster: str, patch: dict[str, Any] | None) -> None:
        self.cs.patch_config(STATUS, cluster, patch)

    # -- commissioning ----------------------------------------------------------------
    def update(self, cluster: str, config: Any, etag: str | None, *, force: bool = False,
               flux_template: Any = None, same_name: tuple[str, ...] = ()) -> str:
        """Commission or re-render ``cluster``; returns the phase reached.

        ``flux_template`` is the current Flux template (read here when not given);
        ``same_name`` lists other clusters configured with the same name. Invalid
        configuration is recorded as ``phase: Failed`` and is not retried until the entry
        changes; anything else that fails raises, for the caller to retry.
        """
        status = self.cs.get_config(STATUS, cluster) or {}
        if (not force and status.get("ready") and status.get("observedEtag") == etag
                and status.get("fluxVersion") == FLUX_VERSION):
            return "Ready"
        try:
            config = check_config(config)
            sticky = (status.get("spec") or {}).get("name")
            if sticky and sticky != config["name"] and status.get("flux"):
                raise InvalidConfig(f"the name of a commissioned cluster cannot change (it is "
                                    f"{sticky!r}); delete the entry and create a new one")
            for other in same_name:
                if self._holds_name(other, config["name"]):
                    raise InvalidConfig(f"the name {config['name']!r} is used by cluster {other}")
            helm = self._helm_release(cluster, config)
            if flux_template is None:
                flux_template = self.cs.get_config(uuids.App.FluxTemplate,
                                                   uuids.App.FluxTemplate)
            if not isinstance(flux_template, dict):
                raise InvalidConfig("no Flux template is configured")
            content = repo_content(flux_template, context(self.settings, cluster, config, helm))
        except (InvalidConfig, ValueError) as exc:
            self._patch(cluster, {"spec": config, "ready": False, "phase": "Failed",
                                  "error": str(exc), "observedEtag": etag,
                                  "conditions": [condition("Ready", False, "InvalidConfig",
                                                           str(exc))]})
            log.warning("cluster %s: %s", cluster, exc)
            return "Failed"
        self._patch(cluster, {"spec": config, "phase": "Provisioning", "error": None,
                              "ready": bool(status.get("ready"))})
        name = config["name"]
        self.cs.put_config(uuids.App.SparkplugAddress, cluster,
                           {"group_id": f"{self.settings.organisation}-{name}"})
        done: dict[str, Any] = {}
        for role in accounts.ROLES:  # found by name again after a crash: no duplicates
            state = status.get(role.key) or {}
            if not state.get("done"):
                principal = accounts.ensure_account(self.cs, role, cluster, name,
                                                    self.groups[role.key])
                done[role.key] = {"uuid": principal, "done": True}
        self.cs.put_config(uuids.App.GitRepoConfig, cluster,
                           {"path": f"{self.repo_path}/{name}"})
        self.cs.add_member(self.groups["cluster"], cluster)
        result = self.repos.write(cluster, content.change_set(), "Cluster flux update")
        self._patch(cluster, {
            **done, "self_link": content.self_link, "ready": True, "fluxVersion": FLUX_VERSION,
            "phase": "Ready", "error": None, "observedEtag": etag, "commit": result.commit,
            "conditions": [condition("Ready", True, "Commissioned",
                                     f"repository at {result.commit}")]})
        return "Ready"

    def _holds_name(self, other: str, name: str) -> bool:
        """True if ``other`` was commissioned (or is being) under ``name``."""
        status = self.cs.get_config(STATUS, other) or {}
        return (status.get("spec") or {}).get("name") == name and status.get("phase") != "Failed"

    def _helm_release(self, cluster: str, config: dict[str, Any]) -> dict[str, Any] | None:
        """The cluster's HelmRelease from its chart template (only when ``chart`` is set)."""
        if "chart" not in config:
            return None
        chart = self.cs.get_config(uuids.App.HelmChartTemplate, config["chart"])
        if not isinstance(chart, dict) or "chart" not in chart:
            raise InvalidConfig(f"unknown chart {config['chart']}")
        entry = self.cs.get_config(uuids.App.K8sResourceTemplate, uuids.K8sResource.HelmRelease)
        if not isinstance(entry, dict) or "template" not in entry:
            raise InvalidConfig("no HelmRelease resource template is configured")
        ctx = {"uuid": cluster, "name": config["name"]}
        rendered_chart = render(chart, ctx)
        values = {**rendered_chart.get("values", {}), **config.get("values", {})}
        release = render(entry, {**rendered_chart, "uuid": cluster, "values": values,
                                 "name": f"edge-cluster-{cluster}", "prefix": "edge-cluster",
                                 "source": "helm-charts"})["template"]
        release.setdefault("metadata", {})["namespace"] = config["namespace"]
        return release

    # -- decommissioning --------------------------------------------------------------
    def delete(self, cluster: str) -> None:
        """Remove everything commissioning created; the setup status entry goes last."""
        status = self.cs.get_config(STATUS, cluster)
        if status is None:
            return
        self._patch(cluster, {"phase": "Deleting", "ready": False})
        name = (status.get("spec") or {}).get("name")
        for role in accounts.ROLES:
            principal = (status.get(role.key) or {}).get("uuid")
            if principal:
                self._remove_account(role, principal, name)
                self._patch(cluster, {role.key: None})
        if name:  # a crash may have left a principal before its uuid was recorded
            for role in accounts.ROLES:
                orphan = self.cs.find_principal(role.principal_name(name))
                # ours, or one a crash left between creating it and granting it anything
                if orphan and (self._serves(orphan, cluster)
                               or not self.cs.find_grants(principal=orphan)):
                    # recorded first: a crash halfway through is resumed above, by uuid
                    self._patch(cluster, {role.key: {"uuid": orphan, "done": False}})
                    accounts.remove_account(self.cs, orphan)
                    self._patch(cluster, {role.key: None})
        self.cs.delete_config(uuids.App.GitRepoConfig, cluster)
        self._remove_member(self.groups["cluster"], cluster)
        self.cs.delete_config(uuids.App.SparkplugAddress, cluster)
        self.cs.delete_config(uuids.App.EdgeClusterStatus, cluster)
        self.repos.archive(cluster)
        self.cs.delete_config(STATUS, cluster)

    def _remove_account(self, role: accounts.Role, principal: str, name: str | None) -> None:
        """Remove a recorded account; one an earlier, killed run already removed is done.

        Once its object is gone it is no Edge account any more, and the Config Store
        refuses (403, not 404) to delete it again.
        """
        try:
            accounts.remove_account(self.cs, principal)
        except Forbidden:
            if name is None or self.cs.find_principal(role.principal_name(name)) == principal:
                raise  # still there under its name: a real permission problem
            log.info("account %s was already removed", principal)

    def _serves(self, principal: str, cluster: str) -> bool:
        """True if one of the principal's grants is for ``cluster``."""
        for grant in self.cs.find_grants(principal=principal):
            found = self.cs.get_grant(grant)
            if cluster in (found.get("target"), found.get("object")):
                return True
        return False

    def _remove_member(self, group: str, obj: str) -> None:
        if obj in self.cs.class_members(group):
            self.cs.remove_member(group, obj)
