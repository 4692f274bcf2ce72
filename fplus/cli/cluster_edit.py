"""``fplus cluster label`` and ``fplus cluster set``: edit a cluster's configuration.

Both read the cluster first and send their merge-patch with that version's ETag as
``If-Match``, so a change someone else made in between is reported (exit 1, nothing
written), never overwritten."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import click
import json_merge_patch

from fplus.jsontypes import as_object

from . import refs
from .api import ApiError, ManagerApi, Row
from .labels import labels_text, parse_label_changes
from .output import Column, emit, output_option, quiet_option
from .session import manager
from .values import read_values

DEFAULT = "default"
"""``--flux-version default``, ``--flux-template default``: the field removed (null)."""
EDIT_COLUMNS: list[Column] = [
    ("NAME", lambda c: c.get("name")), ("UUID", lambda c: c.get("uuid")),
    ("PHASE", lambda c: c.get("phase")), ("CHART", lambda c: c.get("chart")),
    ("FLUX", lambda c: c.get("fluxVersion")),
    ("SEALED SECRETS", lambda c: c.get("sealedSecrets")),
    ("LABELS", lambda c: labels_text(c.get("labels")) or "-")]


def _edit(api: ManagerApi, cluster_ref: str,
          make_patch: Callable[[Row], Mapping[str, object]]) -> Row:
    """Read the cluster, build the patch from it (``make_patch(current)``), send it with
    If-Match; the edited cluster."""
    cluster_uuid = refs.cluster(api, cluster_ref)
    current, etag = api.cluster(cluster_uuid)
    patch = make_patch(current)
    try:
        return api.edit(cluster_uuid, patch, etag)[0]
    except ApiError as exc:
        if exc.status == 412:
            raise ApiError(412, f"{cluster_ref} changed while this command ran; nothing was "
                                "written: run it again") from None
        raise


@click.command("label")
@click.argument("cluster_ref", metavar="NAME|UUID")
@click.argument("changes", nargs=-1, required=True, metavar="KEY=VALUE|KEY-...")
@click.option("--overwrite", is_flag=True, help="allow changing a label that has a value")
@output_option
@quiet_option
def label(cluster_ref: str, changes: tuple[str, ...], overwrite: bool, fmt: str) -> None:
    """Set (KEY=VALUE) or remove (KEY-) labels of a cluster, as kubectl label does."""
    wanted = parse_label_changes(changes)

    def labels_patch(current: Row) -> Row:
        labels = as_object(current.get("labels"))
        for key, value in wanted.items():
            if value is None and key not in labels:
                click.echo(f"label {key!r} not found", err=True)
            elif (value is not None and not overwrite and key in labels
                  and labels[key] != value):
                raise click.ClickException(
                    f"{key!r} already has a value ({labels[key]}); nothing was written: give "
                    "--overwrite to change it")
        return {"labels": wanted}

    edited = _edit(manager(), cluster_ref, labels_patch)
    click.echo(f"{cluster_ref}: labeled", err=True)
    emit(edited, fmt, EDIT_COLUMNS)


@click.command("set")
@click.argument("cluster_ref", metavar="NAME|UUID")
@click.option("--values", "values_file", metavar="FILE|-",
              help="YAML or JSON file whose mapping becomes the cluster's values "
                   "(-: standard input)")
@click.option("--chart", "chart_ref", metavar="NAME|UUID",
              help="the Helm chart template to deploy (fplus chart list)")
@click.option("--flux-version", metavar="VERSION|default",
              help="a Flux version imported centrally (fplus flux import) the edge applies; "
                   "default: the Flux template's (none set)")
@click.option("--flux-template", metavar="UUID|default",
              help="pin the cluster to this entry of the Flux template app; default: back "
                   "to the default template")
@click.option("--sealed-secrets/--no-sealed-secrets", "sealed_secrets", default=None,
              help="install the Sealed Secrets controller, or not")
@output_option
@quiet_option
def set_config(cluster_ref: str, values_file: str | None, chart_ref: str | None,
               flux_version: str | None, flux_template: str | None,
               sealed_secrets: bool | None, fmt: str) -> None:
    """Change a cluster's values, chart, Flux version, Flux template or Sealed Secrets (its
    repo is then written again). The Cluster Manager renders the change first and refuses
    one that cannot work, naming what to do."""
    values = read_values(values_file)
    api = manager()
    chart = None if chart_ref is None else refs.chart(api, chart_ref)
    fields = {"chart": chart, "fluxVersion": flux_version, "fluxTemplate": flux_template,
              "sealedSecrets": sealed_secrets}
    patch: Row = {k: None if v == DEFAULT else v for k, v in fields.items() if v is not None}
    if values is None and not patch:
        raise click.UsageError("nothing to set: give --values, --chart, --flux-version, "
                               "--flux-template or --sealed-secrets/--no-sealed-secrets")

    def config_patch(current: Row) -> Row:
        if values is None:
            return patch
        # the file replaces the values: a merge-patch from the current ones to it
        return {**patch, "values": json_merge_patch.create_patch(
            current.get("values") or {}, values)}

    emit(_edit(api, cluster_ref, config_patch), fmt, EDIT_COLUMNS)
