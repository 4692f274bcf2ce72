"""``cluster-manager import-chart`` and ``import-flux``: a Helm chart into the shared charts
repo, a `flux install --export` into the central Flux repo, committed as the Cluster
Manager's own principal, so edges install them from the centre (air-gapped edges need
nothing from the internet for them). What is checked and committed is
:mod:`..services.charts.central_imports`'s, shared with ``POST /v1/chart`` and
``POST /v1/flux-version``."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from fplus.config_store.client import ConfigStoreClient
from fplus.git.hosts.ours import GitServerRepos

from ..formats.flux_export import FluxExportError
from ..formats.helm_chart import ChartError, read_chart
from ..model.settings import Settings
from ..services.charts.central_imports import (
    Import,
    ImportRefused,
    chart_import,
    check_chart_name,
    commit,
    flux_import,
    read_flux_bytes,
)

COMMANDS = {"import-chart": ("CHART.tgz|DIR", "commit a Helm chart (.tgz or directory) into "
                                              "the shared charts repo"),
            "import-flux": ("FILE", "commit a `flux install --export` into the central Flux "
                                    "repo, as the directory of its version")}


def add_parsers(sub: argparse._SubParsersAction,
                store_options: Callable[[argparse.ArgumentParser], None]) -> None:
    """The two sub-commands (``store_options`` adds --config-store and --data-dir)."""
    for command, (metavar, help_text) in COMMANDS.items():
        parser = sub.add_parser(command, help=help_text)
        store_options(parser)
        parser.add_argument("source", type=Path, metavar=metavar)
        parser.add_argument("--git", default="http://127.0.0.1:8702",
                            help="Git server base URL, as this command reaches it")
        parser.add_argument("--git-repos", type=Path,
                            help="the Git server's repos directory, if on this machine")
        if command == "import-chart":
            parser.add_argument("--system-chart", action="store_true",
                                help="the chart replaces a system chart (edge-cluster: the "
                                     "chart every cluster runs); without it, refused")


def _wanted(args: argparse.Namespace, cs: ConfigStoreClient) -> Import:
    """What ``args.source`` would commit; SystemExit if it is refused."""
    command, source = args.command, args.source
    try:
        if command == "import-chart":
            wanted = chart_import(read_chart(source))
            check_chart_name(cs, wanted.name, system_chart=args.system_chart)
            return wanted
        try:
            data = source.read_bytes()
        except OSError as exc:
            raise FluxExportError(f"{source}: {exc}") from None
        return flux_import(read_flux_bytes(data, str(source)))
    except (ChartError, FluxExportError, ImportRefused) as exc:
        raise SystemExit(f"cluster-manager {command}: {exc}; nothing was imported") from None


def run_import(args: argparse.Namespace, cs: ConfigStoreClient, user: str, password: str,
               ca_file: str | None) -> str:
    """Commit what ``args.source`` holds (replacing an earlier import of the same chart or
    version), then ask every cluster that failed for want of an import to try again;
    returns a line saying what happened. Refused input writes nothing."""
    wanted = _wanted(args, cs)
    settings = Settings(config_store_url=args.config_store, git_url=args.git,
                        data_dir=args.data_dir, git_repos=args.git_repos)
    result = commit(GitServerRepos(settings.git_host, user, password, ca_file), cs, wanted)
    done = (f"imported {wanted.what} ({wanted.files} files) at {result.commit}"
            if result.changed else f"{wanted.what} is already imported as it is")
    retried = result.retried
    return done + (f"; {retried} cluster(s) that waited for an import will try again"
                   if retried else "")

