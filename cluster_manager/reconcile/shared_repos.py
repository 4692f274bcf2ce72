"""The repos every edge shares: the central Helm charts repo gets a ``main`` branch (a README)
as soon as a leader runs, so each edge's ``helm-charts`` GitRepository resolves even before
any chart is added."""

from __future__ import annotations

import logging
import threading

from config_store import uuids

from ..gitrepo import ChangeSet
from .job import RepoStore

log = logging.getLogger(__name__)

HELM_CHARTS_README = """\
# Helm charts

The charts every edge cluster installs from (its Flux GitRepository `helm-charts`): the
cluster's own `chart` and every Edge deployment whose chart template names no other source.
Each chart is a directory holding its `Chart.yaml`, named as the Helm chart template entry's
`chart`. Managed by the Cluster Manager; every edge's Flux account may pull this repo.
"""


def ensure_helm_charts_repo(repos: RepoStore, stop: threading.Event,
                            delays: tuple[float, float] = (1.0, 60.0)) -> bool:
    """Write the README into the charts repo (no commit when it is already there), retrying
    with back-off until it works or ``stop`` is set; True once done."""
    delay, longest = delays
    while not stop.is_set():
        try:
            readme = ChangeSet(writes={"README.md": HELM_CHARTS_README})
            repos.write(uuids.Shared.HelmChartsRepo, readme, "Shared Helm charts repo")
        except Exception as exc:  # any failure is retried, and said
            log.warning("the shared Helm charts repo is not ready (%s: %s); retrying in "
                        "%.0f s", type(exc).__name__, exc, delay)
            stop.wait(delay)
            delay = min(delay * 2, longest)
        else:
            return True
    return False
