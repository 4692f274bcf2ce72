"""Whether the central repos hold what a cluster's repo is about to refer to (a chart, a
Flux version), so a cluster is Failed with what to import instead of committing a repo its
edge cannot apply. Positive answers are remembered for :data:`REMEMBER` seconds, so a render
does not read the repo each time (imports only add; a removal shows within that time)."""

from __future__ import annotations

from fplus.config_store import uuids
from fplus.config_store.client import TTLCache
from fplus.git.store import RepoStore

from ..model.apps_and_roles import AFTER_IMPORT
from .rendering import TemplateMissing

CHARTS = uuids.Shared.HelmChartsRepo
FLUX = uuids.Shared.FluxSystemRepo
FLUX_FILE = "gotk-components.yaml"
REMEMBER = 60.0


class CentralFiles:
    """Answers "does the central repo hold this file?", remembering the yeses."""

    def __init__(self) -> None:
        self._seen = TTLCache(REMEMBER)  # a miss raises, and what raises is not remembered

    def require(self, repos: RepoStore, repo: str, directory: str, file: str,
                refusal: str) -> None:
        """:class:`TemplateMissing` (``refusal``, and to redeploy after importing) unless
        ``repo`` holds ``directory/file``."""
        path = f"{directory}/{file}"

        def present() -> bool:
            if path not in repos.read_dir(repo, directory):
                raise TemplateMissing(f"{refusal}, {AFTER_IMPORT}")
            return True

        self._seen.get(f"{repo}/{path}", present)
