"""The bootstrap script for one cluster: template entry + fresh credentials + self-link.

Rendered from the Bootstrap script entry (``a807d8fc-…``, seeded from
``manifests/bootstrap-script.yaml``) with json-templates semantics, then packed by the
:mod:`bootstrap` package. Every script delivered rotates the cluster's two machine
credentials (Flux pull, Edge Sync) with server-generated passwords, so running the newest
script replaces whatever credentials the edge had, while the previous ones keep a running edge
connected until the new ones are used (or a grace period ends). Files come from the setup
status and this process; no repository is cloned.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import bootstrap
from config_store import uuids
from config_store.client import ConfigStoreClient
from templating import TemplateError, render

from ..setup_status import SetupStatus
from ..vocabulary import EDGE_SYNC_SECRET, FLUX_SECRET, FLUX_VERSION, ROLES
from .errors import NotFound, Unavailable

CREDENTIALS = "credentials.yaml"
"""The packed file holding the edge's Secrets."""
FLUX_INSTALL_URL = (f"https://github.com/fluxcd/flux2/releases/download/v{FLUX_VERSION}/"
                    "install.yaml")


class ScriptBuilder:
    """Builds bootstrap scripts for ready clusters."""

    def __init__(self, cs: ConfigStoreClient, *, flux_install_file: Path | None = None,
                 wait_timeout: str = "300s", with_credentials: bool = True,
                 rotation_grace: float = 900.0, edge_ca: str | None = None) -> None:
        self.cs = cs
        self.edge_ca = edge_ca
        self.rotation_grace = rotation_grace
        self.flux_install_file = flux_install_file
        self.wait_timeout = wait_timeout
        self.with_credentials = with_credentials

    def build(self, cluster: str, setup: SetupStatus, *,
              redeem: Callable[[], None] | None = None,
              release: Callable[[], None] | None = None) -> str:
        """The script for ``cluster`` whose setup status is ``setup`` (must be ready).

        The template is rendered and packed first: a template that fails rotates nothing and
        uses up no URL. Only then is the URL redeemed (``redeem``) and are the credentials
        rotated; if rotating fails, ``release`` makes the URL usable again. The previous
        passwords stay valid for ``rotation_grace`` seconds or until the new ones are used,
        so fetching a script never cuts off a running edge.
        """
        if not setup.bootstrappable or setup.self_link is None:
            raise NotFound(f"cluster {cluster} is not ready yet (phase "
                           f"{setup.phase}); try again when it is")
        entry = self.cs.get_config(uuids.App.BootstrapScript, uuids.App.BootstrapScript)
        if not isinstance(entry, dict):
            raise Unavailable("no Bootstrap script template is configured")
        context = {"uuid": cluster, "name": setup.name, "namespace": setup.namespace,
                   "files": bootstrap.PLACEHOLDER, "timeout": self.wait_timeout,
                   "flux": {"version": FLUX_VERSION,
                            # an embedded export is applied instead: no URL off this stack
                            "install_url": "" if self.flux_install_file else FLUX_INSTALL_URL,
                            "secret": FLUX_SECRET},
                   "edge_sync": {"credentials_secret": EDGE_SYNC_SECRET}}
        files = {"self-link.yaml": setup.self_link}
        if self.flux_install_file is not None:
            files["flux-system.yaml"] = self.flux_install_file.read_text()
        try:
            script = bootstrap.prepare_script(render(entry, context), files)
            if self.with_credentials:  # its name must be free before anything rotates
                script.with_files({CREDENTIALS: ""})
        except TemplateError as exc:
            raise Unavailable(f"the Bootstrap script template does not render: {exc}") from exc
        except bootstrap.BootstrapError as exc:
            raise Unavailable(f"the Bootstrap script template is unusable: {exc}") from exc
        if redeem is not None:
            redeem()
        if not self.with_credentials:
            return script.text()
        try:
            credentials = self._rotate_credentials(cluster, setup)
        except Exception:
            if release is not None:
                release()
            raise
        return script.with_files({CREDENTIALS: credentials}).text()

    def _rotate_credentials(self, cluster: str, setup: SetupStatus) -> str:
        """New passwords for the cluster's principals, as the Secrets manifest."""
        assert setup.name is not None and setup.namespace is not None
        secrets: dict[str, tuple[str, str]] = {}
        for role in ROLES:
            principal = setup.account(role).uuid
            if not principal:
                raise NotFound(f"cluster {cluster} has no {role.key} account yet")
            password = self.cs.generate_password(principal,
                                                 previous_valid_for=self.rotation_grace)
            secrets[role.secret] = (role.principal_name(setup.name), password)
        return bootstrap.credentials_manifest(setup.namespace, secrets, self.edge_ca)
