"""What a change to clusters takes beyond Edge.Perm.Clusters on them (the routes' check),
decided here so the API and the console refuse alike, with nothing written.

- A Flux template: its files are what every edge's Flux applies, so putting one into a
  cluster's repo takes what writing the Flux template app takes: ConfigDB WriteApp on that
  app (granted on the app or the wildcard; a grant restricted to one entry is not counted
  here). That is a create naming ``fluxTemplate``, an edit changing it (to another template,
  or ``null``: the default), and a cluster rollout of a template.
- Labels: fleet deployments and cluster rollouts choose clusters by label, and making either
  takes Clusters on the wildcard. A label change that adds the cluster to, or removes it
  from, a fleet deployment's targets or an unfinished cluster rollout's takes that too.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

from fplus.config_store import uuids
from fplus.config_store.client import Caller, ConfigStoreClient

from ...model.cluster_config import ClusterConfig
from ..errors import Forbidden, Unprocessable

TEMPLATE_APP = uuids.App.FluxTemplate
TEMPLATE_GRANT = f"ConfigDB WriteApp on the Flux template app ({TEMPLATE_APP})"
WILDCARD_GRANT = "Edge.Perm.Clusters on every cluster (a wildcard grant)"
LabelMoves = Callable[[ConfigStoreClient, str, Mapping[str, object], Mapping[str, object]],
                      list[str]]
"""``(cs, cluster, before, after)``: the fleet deployments and unfinished cluster rollouts
a label change moves the cluster into or out of, named (the rollouts package's
``label_moves``, given by the wiring: this module knows no rollout)."""


class Permissions(Protocol):
    """Answers whether a caller holds a permission on a target (or the wildcard)."""

    def allowed(self, caller: Caller, permission: str, target: str) -> bool: ...


@dataclass(frozen=True)
class Acting:
    """The principal an operation acts for, and where its grants are looked up."""

    caller: Caller
    access: Permissions

    def may(self, permission: str, target: str) -> bool:
        return self.access.allowed(self.caller, permission, target)


def require_template_write(who: Acting, what: str) -> None:
    """403 naming the grant unless ``who`` may write the Flux template app."""
    if not who.may(uuids.ConfigDBPerm.WriteApp, TEMPLATE_APP):
        raise Forbidden(f"{what} puts a Flux template into clusters' repos, which takes "
                        f"{TEMPLATE_GRANT}, as writing a template does; nothing was written")


def check_template(cs: ConfigStoreClient, who: Acting, template: str | None, what: str) -> None:
    """``template`` (a uuid, or None: the default) may be given to a cluster by ``who``:
    403 without the grant, 422 unless it names a stored Flux template."""
    require_template_write(who, what)
    if template is not None and not isinstance(cs.get_config(TEMPLATE_APP, template), dict):
        raise Unprocessable(f"fluxTemplate: {template} is no entry of the Flux template app "
                            f"({TEMPLATE_APP}); store the template first, or send null for "
                            "the default")


def check_create(cs: ConfigStoreClient, who: Acting, config: ClusterConfig) -> None:
    """What creating a cluster of ``config`` takes beyond Clusters on the wildcard."""
    if "fluxTemplate" in config:
        check_template(cs, who, config["fluxTemplate"], "naming fluxTemplate")


def check_edit(cs: ConfigStoreClient, who: Acting, cluster: str,
               before: Mapping[str, object], after: ClusterConfig,
               label_moves: LabelMoves) -> None:
    """What changing ``cluster``'s entry from ``before`` to ``after`` takes beyond Clusters
    on that cluster: 403 (or 422 for an unknown template) and nothing written."""
    if after.get("fluxTemplate") != before.get("fluxTemplate"):  # a checked uuid, or none
        check_template(cs, who, after.get("fluxTemplate"), "changing fluxTemplate")
    if (before.get("labels") or {}) == (after.get("labels") or {}) \
            or who.may(uuids.EdgePerm.Clusters, uuids.NULL):
        return
    moved = label_moves(cs, cluster, before, after)
    if moved:
        raise Forbidden(f"labels: this change moves cluster {cluster} into or out of "
                        f"{'; '.join(moved)}. Labels choose where fleet-wide configuration "
                        f"goes, so such a change takes {WILDCARD_GRANT}, as making those "
                        "does; nothing was written")

