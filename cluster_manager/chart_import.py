"""``cluster-manager import-chart``: a Helm chart into the shared charts repo, committed as
the Cluster Manager's own principal, so edges install it from the centre (air-gapped edges
need nothing from the internet for it)."""

from __future__ import annotations

import argparse
from pathlib import Path

from config_store import uuids

from .charts import ChartError, read_chart
from .cluster_repos import ClusterRepos
from .gitrepo import ChangeSet
from .settings import Settings


def add_parser(sub: argparse._SubParsersAction, store_options: object) -> None:
    """The ``import-chart`` sub-command (``store_options`` adds --config-store/--data-dir)."""
    parser = sub.add_parser("import-chart", help="commit a Helm chart (.tgz or directory) "
                                                  "into the shared charts repo")
    store_options(parser)  # type: ignore[operator]
    parser.add_argument("chart", type=Path, metavar="CHART.tgz|DIR")
    parser.add_argument("--git", default="http://127.0.0.1:8702",
                        help="Git server base URL, as this command reaches it")
    parser.add_argument("--git-repos", type=Path,
                        help="the Git server's repos directory, if on this machine")


def import_chart(args: argparse.Namespace, user: str, password: str,
                 ca_file: str | None) -> str:
    """Commit the chart's files under ``<name>/`` (replacing an earlier import of it);
    returns a line saying what happened. :class:`SystemExit` with one line if the chart is
    refused, and then nothing is written."""
    try:
        chart = read_chart(args.chart)
    except ChartError as exc:
        raise SystemExit(f"cluster-manager import-chart: {exc}; nothing was imported") from None
    settings = Settings(config_store_url=args.config_store, git_url=args.git,
                        data_dir=args.data_dir, git_repos=args.git_repos)
    repos = ClusterRepos(settings, user, password, ca_file)
    changes = ChangeSet(writes=chart.repo_files(), replace_dirs=frozenset({chart.name}))
    result = repos.write(uuids.Shared.HelmChartsRepo, changes,
                         f"Import chart {chart.name} {chart.version}")
    if not result.changed:
        return f"chart {chart.name} {chart.version} is already in the charts repo as it is"
    return (f"imported chart {chart.name} {chart.version} ({len(chart.files)} files) into "
            f"the shared charts repo at {result.commit}")
