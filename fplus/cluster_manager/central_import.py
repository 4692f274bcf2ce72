"""``cluster-manager import-chart`` and ``import-flux``: a Helm chart into the shared charts
repo, a `flux install --export` into the central Flux repo, committed as the Cluster
Manager's own principal, so edges install them from the centre (air-gapped edges need
nothing from the internet for them)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from fplus.config_store import uuids
from fplus.config_store.client import ConfigStoreClient

from .api.clusters import request_redeploy
from .charts import ChartError, read_chart
from .cluster_repos import ClusterRepos
from .flux_exports import FluxExportError, read_flux_export
from .gitrepo import ChangeSet, InvalidPath
from .settings import Settings
from .setup_status import FAILED
from .vocabulary import AFTER_IMPORT, STATUS_APP

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


def _changes(command: str, source: Path) -> tuple[str, ChangeSet, str, int]:
    """``(repo, changes, what, files)`` for ``source``; SystemExit if it is refused."""
    try:
        if command == "import-chart":
            chart = read_chart(source)
            return (uuids.Shared.HelmChartsRepo,
                    ChangeSet(writes=chart.repo_files(), replace_dirs=frozenset({chart.name})),
                    f"chart {chart.name} {chart.version}", len(chart.files))
        try:
            text = source.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise FluxExportError(f"{source}: {exc}") from None
        export = read_flux_export(text, str(source))
        return (uuids.Shared.FluxSystemRepo,
                ChangeSet(writes=export.repo_files(), replace_dirs=frozenset({export.version})),
                f"Flux {export.version}", 1)
    except (ChartError, FluxExportError, InvalidPath) as exc:
        raise SystemExit(f"cluster-manager {command}: {exc}; nothing was imported") from None


def run_import(args: argparse.Namespace, cs: ConfigStoreClient, user: str, password: str,
               ca_file: str | None) -> str:
    """Commit what ``args.source`` holds (replacing an earlier import of the same chart or
    version), then ask every cluster that failed for want of an import to try again;
    returns a line saying what happened. Refused input writes nothing."""
    repo, changes, what, files = _changes(args.command, args.source)
    settings = Settings(config_store_url=args.config_store, git_url=args.git,
                        data_dir=args.data_dir, git_repos=args.git_repos)
    result = ClusterRepos(settings, user, password, ca_file).write(repo, changes,
                                                                    f"Import {what}")
    done = (f"imported {what} ({files} files) at {result.commit}" if result.changed
            else f"{what} is already imported as it is")
    retried = retry_waiting_clusters(cs)
    return done + (f"; {retried} cluster(s) that waited for an import will try again"
                   if retried else "")


def retry_waiting_clusters(cs: ConfigStoreClient) -> int:
    """Request a redeploy of every Failed cluster whose error asks for an import first."""
    failed = cs.search(STATUS_APP, {"phase": FAILED}, {"error": "error"}) or {}
    waiting = sorted(c for c, found in failed.items()
                     if isinstance(found.get("error"), str) and AFTER_IMPORT in found["error"])
    for cluster in waiting:
        request_redeploy(cs, cluster)
    return len(waiting)
