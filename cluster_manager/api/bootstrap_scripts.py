"""The bootstrap script for one cluster: template entry + fresh credentials + self-link.

Rendered from the Bootstrap script entry (``a807d8fc-…``, seeded from
``manifests/bootstrap-script.yaml``) with json-templates semantics, then packed by the
:mod:`bootstrap` package. Every fetch rotates the cluster's two machine credentials (Flux
pull, Edge Sync) with server-generated passwords, so running the newest script replaces
whatever credentials the edge had. Files come from the setup status and this process; no
repository is cloned.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import bootstrap
from config_store import uuids
from config_store.client import ConfigStoreClient
from templating import TemplateError, render

from . import accounts
from .errors import NotFound, Unavailable
from .render import EDGE_SYNC_SECRET, FLUX_SECRET
from .settings import FLUX_VERSION

FLUX_INSTALL_URL = (f"https://github.com/fluxcd/flux2/releases/download/v{FLUX_VERSION}/"
                    "install.yaml")
SECRET_FOR_ROLE = {accounts.FLUX.key: FLUX_SECRET, accounts.SYNC.key: EDGE_SYNC_SECRET}


class ScriptBuilder:
    """Builds bootstrap scripts for ready clusters."""

    def __init__(self, cs: ConfigStoreClient, *, flux_install_file: Path | None = None,
                 wait_timeout: str = "300s", with_credentials: bool = True) -> None:
        self.cs = cs
        self.flux_install_file = flux_install_file
        self.wait_timeout = wait_timeout
        self.with_credentials = with_credentials

    def build(self, cluster: str, setup: dict[str, Any]) -> str:
        """The script for ``cluster`` whose setup status is ``setup`` (must be ready)."""
        spec = setup.get("spec") or {}
        if not setup.get("ready") or not isinstance(setup.get("self_link"), str):
            raise NotFound(f"cluster {cluster} is not ready yet (phase "
                           f"{setup.get('phase', 'Pending')}); try again when it is")
        entry = self.cs.get_config(uuids.App.BootstrapScript, uuids.App.BootstrapScript)
        if not isinstance(entry, dict):
            raise Unavailable("no Bootstrap script template is configured")
        context = {"uuid": cluster, "name": spec["name"], "namespace": spec["namespace"],
                   "files": bootstrap.PLACEHOLDER, "timeout": self.wait_timeout,
                   "flux": {"version": FLUX_VERSION, "install_url": FLUX_INSTALL_URL,
                            "secret": FLUX_SECRET},
                   "edge_sync": {"credentials_secret": EDGE_SYNC_SECRET}}
        files = {"self-link.yaml": setup["self_link"]}
        if self.flux_install_file is not None:
            files["flux-system.yaml"] = self.flux_install_file.read_text()
        try:
            rendered = render(entry, context)
        except TemplateError as exc:
            raise Unavailable(f"the Bootstrap script template does not render: {exc}") from exc
        if self.with_credentials:
            files["credentials.yaml"] = self._rotate_credentials(cluster, setup)
        try:
            return bootstrap.build_script(rendered, files)
        except bootstrap.BootstrapError as exc:
            raise Unavailable(f"the Bootstrap script template is unusable: {exc}") from exc

    def _rotate_credentials(self, cluster: str, setup: dict[str, Any]) -> str:
        """New passwords for the cluster's principals, as the Secrets manifest."""
        spec = setup["spec"]
        secrets: dict[str, tuple[str, str]] = {}
        for role in accounts.ROLES:
            principal = (setup.get(role.key) or {}).get("uuid")
            if not principal:
                raise NotFound(f"cluster {cluster} has no {role.key} account yet")
            password = self.cs.generate_password(principal)
            secrets[SECRET_FOR_ROLE[role.key]] = (role.principal_name(spec["name"]), password)
        return bootstrap.credentials_manifest(spec["namespace"], secrets)
