"""Creating a cluster rollout (:mod:`.cluster_entry`): its object, Info name and entry in
the Cluster rollout app; the leader paces it (:mod:`.cluster_kind`) and :mod:`.service`
reads it.

Every refusal is a 422 naming the field, with nothing written: a malformed body, a listed
cluster that is not configured, a rollout that targets no cluster, a change that would not
render on a cluster it targets (:mod:`..changes`: naming the cluster and what to do, say the
Flux version to import). ``preview`` answers what the rollout would do, writing nothing. A
template rollout puts
its candidate into the clusters' repos, so it takes what writing the Flux template app
takes (403 naming the grant, :mod:`..services.clusters.grants`). A second unfinished rollout of the
same kind (``fluxVersion`` or ``fluxTemplate``) is a 409: two would pin or write the same
clusters against each other.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import cast

from fplus.config_store.client import ConfigStoreClient
from fplus.jsontypes import is_object

from ..changes.preview import Assessed, Changes, Target, answer, refusals
from ..changes.refusals import refuse
from ..changes.rendered import read_configs
from ..model.cluster_config import with_v_field
from ..services.clusters.grants import Acting, require_template_write
from ..services.errors import Conflict, Unprocessable
from ..services.named_entries import create_named_entry
from .cluster_entry import (
    CLUSTER_ROLLOUT_APP,
    CLUSTER_ROLLOUT_CLASS,
    FIELDS,
    ClusterRolloutEntry,
    request_errors,
    targets,
    with_change,
)
from .preview_plan import preview_plan
from .service import RolloutService
from .unfinished import unfinished

log = logging.getLogger(__name__)


class ClusterRolloutService:
    """Create cluster rollouts."""

    def __init__(self, cs: ConfigStoreClient, changes: Changes) -> None:
        self.cs, self.changes = cs, changes

    def _checked(self, body: object,
                 configs: dict[str, dict[str, object]]) -> ClusterRolloutEntry:
        """``body`` as it is stored (a ``fluxVersion`` in its ``v`` form); else 422 naming
        the first refused field."""
        if is_object(body) and "change" in body:
            body = dict(body) | {"change": with_v_field(body["change"])}
        errors = request_errors(body)
        if not errors and is_object(body):
            entry = cast(ClusterRolloutEntry, body)  # request_errors checked every field
            unknown = [c for c in entry.get("clusters", []) if c not in configs]
            if unknown:
                errors["clusters"] = f"not clusters: {', '.join(unknown)}"
            elif not targets(entry, configs):
                errors["selector"] = "the rollout targets no configured cluster"
        if errors or not is_object(body):
            field, why = next(iter(errors.items()))
            raise Unprocessable(f"{field}: {why}" if field else why)
        return cast(ClusterRolloutEntry, {k: body[k] for k in FIELDS if k in body})

    def _assessed(self, entry: ClusterRolloutEntry, uuid: str,
                  configs: dict[str, dict[str, object]], compare: bool) -> list[Assessed]:
        """Every targeted cluster rendered with the change (and, to ``compare``, without)."""
        candidate = entry["change"].get("fluxTemplate")
        inputs = self.changes.inputs({} if candidate is None else {uuid: candidate})
        found = [Target(c, str(configs[c].get("name")), configs[c],
                        with_change(uuid, entry, configs[c]))
                 for c in targets(entry, configs)]
        return self.changes.assess(found, compare=compare, inputs=inputs)

    def preview(self, body: object, uuid: str, creator: Acting) -> dict[str, object]:
        """What creating the rollout would do (``?dryRun``): its plan and, per targeted
        cluster, its refusal or the diff of its repo; nothing is written."""
        configs = read_configs(self.cs)
        entry = self._checked(body, configs)
        if "fluxTemplate" in entry["change"]:
            require_template_write(creator, "a Flux template rollout")
        assessed = self._assessed(entry, uuid, configs, compare=True)
        plan = preview_plan(self.cs, entry.get("rollout"),
                            [a.target.uuid for a in assessed], configs,
                            stale_after=self.changes.settings.edge_stale_after)
        return answer(assessed, plan)

    def _check_unfinished(self, entry: ClusterRolloutEntry) -> None:
        """409 if a cluster rollout of the same kind is not finished."""
        kind = next(iter(entry["change"]))
        for other, found in sorted(unfinished(self.cs).items()):
            change = found.get("change")
            if isinstance(change, dict) and kind in change:
                raise Conflict(f"cluster rollout {other} of a {kind} is not finished: "
                               "wait for it, or abort it, first")

    def create(self, body: object, uuid: str, creator: Acting) -> dict[str, object]:
        """Create cluster rollout ``uuid`` (a new uuid) from ``creator``'s ``body``; its
        view."""
        configs = read_configs(self.cs)
        entry = self._checked(body, configs)
        if "fluxTemplate" in entry["change"]:
            require_template_write(creator, "a Flux template rollout")
        refuse(refusals(self._assessed(entry, uuid, configs, compare=False)))
        self._check_unfinished(entry)
        entry["createdAt"] = datetime.now(UTC).isoformat(timespec="microseconds").replace(
            "+00:00", "Z")
        create_named_entry(self.cs, CLUSTER_ROLLOUT_CLASS, CLUSTER_ROLLOUT_APP, uuid,
                           entry["name"], entry)
        log.info("cluster rollout %s (%s): created, changing %s", uuid, entry["name"],
                 next(iter(entry["change"])))
        return RolloutService(self.cs).get(uuid)
