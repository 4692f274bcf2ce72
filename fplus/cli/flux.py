"""``fplus flux import|list``: Flux versions in the central Flux repo, which a cluster's
``fluxVersion`` may name."""

from __future__ import annotations

from pathlib import Path

import click

from .output import Column, emit, output_option
from .session import manager

COLUMNS: list[Column] = [("VERSION", lambda v: v.get("version"))]


@click.group("flux")
def flux() -> None:
    """Flux versions edges install from the centre (a cluster's --flux-version)."""


@flux.command("import")
@click.argument("source", type=click.Path(exists=True, dir_okay=False, path_type=Path),
                metavar="FILE")
def import_flux(source: Path) -> None:
    """Import a `flux install --export` saved in FILE into the central Flux repo."""
    done = manager().import_flux(source.read_bytes())
    click.echo(f"imported Flux {done['version']} at {done['commit']}" if done["changed"]
               else f"Flux {done['version']} is already imported as it is")
    if done.get("retried"):
        click.echo(f"{done['retried']} cluster(s) that waited for an import will try again",
                   err=True)


@flux.command("list")
@output_option
def list_versions(fmt: str) -> None:
    """The imported Flux versions, oldest first."""
    versions = manager().flux_versions()
    emit(versions if fmt != "table" else [{"version": v} for v in versions], fmt, COLUMNS)
