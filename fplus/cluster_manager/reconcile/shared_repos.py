"""The repos every edge shares get a ``main`` branch (a README) as soon as a leader runs, so
each edge's GitRepository of them resolves before anything is imported: the Helm charts repo
and the central Flux repo."""

from __future__ import annotations

import logging
import threading

from fplus.config_store import uuids
from fplus.git.repo import ChangeSet
from fplus.git.store import RepoStore

from ..model.settings import SHARED_REPO_NAMES

log = logging.getLogger(__name__)

HELM_CHARTS_README = """\
# Helm charts

The charts every edge cluster installs from (its Flux GitRepository `helm-charts`): the
cluster's own `chart` and every Edge deployment whose chart template names no other source.
Each chart is a directory holding its `Chart.yaml`, named as the Helm chart template entry's
`chart` (`cluster-manager import-chart` puts them here). Every edge's Flux account may pull
this repo.
"""
FLUX_SYSTEM_README = """\
# Flux

One directory per Flux version (`cluster-manager import-flux` puts a `flux install --export`
here as `<version>/gotk-components.yaml`). An edge whose cluster or Flux template names a
version applies that directory (Kustomization `flux-system` in its repo), so changing the
version upgrades Flux on those edges by commit. Every edge's Flux account may pull this repo.
"""
READMES = {uuids.Shared.HelmChartsRepo: HELM_CHARTS_README,
           uuids.Shared.FluxSystemRepo: FLUX_SYSTEM_README}


def ensure_shared_repos(repos: RepoStore, stop: threading.Event,
                        delays: tuple[float, float] = (1.0, 60.0)) -> bool:
    """Write each shared repo's README (no commit when it is already there), retrying with
    back-off until all are written or ``stop`` is set; True once done."""
    delay, longest = delays
    pending = dict(READMES)
    while not stop.is_set():
        for repo, readme in list(pending.items()):
            try:
                repos.create(repo, SHARED_REPO_NAMES[repo])
                repos.write(repo, ChangeSet(writes={"README.md": readme}), "Shared repo")
            except Exception as exc:  # any failure is retried, and said
                log.warning("shared repo %s is not ready (%s: %s); retrying in %.0f s",
                            repo, type(exc).__name__, exc, delay)
            else:
                del pending[repo]
        if not pending:
            return True
        stop.wait(delay)
        delay = min(delay * 2, longest)
    return False
