"""The labels form on a cluster's page: the cluster's labels as ``key=value`` pairs, written
back through the service ``PATCH /v1/cluster/<c>`` calls (:meth:`ClusterService.edit`), so
the same checks apply: the label syntax, and the permission a label change takes when it
moves the cluster into or out of a fleet deployment's targets or a cluster rollout's
(:mod:`...services.clusters.grants`). The form shows the change's preview first
(:mod:`.change_preview`). A refusal re-renders the page with the service's message next to
the field, and nothing is written."""

from __future__ import annotations

from flask import g, redirect, request, url_for
from werkzeug.wrappers import Response

from fplus.config_store import uuids
from fplus.jsontypes import Doc

from ...rollouts.label_moves import label_moves
from ...services.errors import ApiError
from ..context import acting, require, services
from .change_preview import is_dry_run, preview
from .pages import bp, cluster_page
from .session import signed_in


def parse_labels(text: str) -> dict[str, str]:
    """``site=leeds, tier=line`` (commas or new lines between pairs) as a dict; ValueError
    naming a pair that is not ``key=value``."""
    labels: dict[str, str] = {}
    for part in text.replace("\n", ",").split(","):
        if not part.strip():
            continue
        key, equals, value = part.partition("=")
        if not equals or not key.strip():
            raise ValueError(f"{part.strip()!r} is not key=value")
        labels[key.strip()] = value.strip()
    return labels


def labels_patch(before: Doc, after: dict[str, str]) -> dict[str, object]:
    """The merge-patch turning labels ``before`` into ``after`` (a removed key as null)."""
    return {"labels": {**dict.fromkeys(set(before) - set(after)), **after}}


@bp.post("/cluster/<cluster:cluster>/labels")
@signed_in
def edit_labels(cluster: str) -> Response | tuple[str, int]:
    """Write the labels; with ``?dryRun``, the preview: the fleet deployments and cluster
    rollouts the change moves the cluster into or out of, and what changes in its repo."""
    who = require(uuids.EdgePerm.Clusters, cluster, g.console.authorization)
    text = request.form.get("labels", "")
    try:
        wanted = parse_labels(text)
        clusters = services().clusters
        config = clusters.configured(cluster).config
        current = config.get("labels")
        patch = labels_patch(current if isinstance(current, dict) else {}, wanted)
        if is_dry_run():
            answer = clusters.preview_edit(cluster, patch, acting(who))
            moves = label_moves(services().cs, cluster, config, {**config, "labels": wanted})
            shown = preview(answer, url_for("console.edit_labels", cluster=cluster),
                            request.form, ("labels",), moves=moves)
            return cluster_page(cluster, labels_form=text, preview=shown), shown.status
        clusters.edit(cluster, patch, acting(who))
    except ValueError as exc:
        return cluster_page(cluster, labels_error=f"labels: {exc}", labels_form=text), 422
    except ApiError as exc:
        if exc.status == 404:
            raise
        return cluster_page(cluster, labels_error=exc.message, labels_form=text), exc.status
    return redirect(url_for("console.cluster", cluster=cluster, done="labelled"), 303)
