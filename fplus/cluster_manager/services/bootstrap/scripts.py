"""The bootstrap script for one cluster: template entry + fresh credentials + self-link.

Rendered from the Bootstrap script entry (``a807d8fc-…``, seeded from
``fplus/manifests/bootstrap-script.yaml``) with json-templates semantics, then packed by the
:mod:`bootstrap` package. Every script delivered rotates the cluster's two machine
credentials (Flux pull, Edge Sync) with server-generated passwords, both or neither (one batch
request), so running the newest script replaces whatever credentials the edge had, while the
previous ones keep a running edge connected until the new ones are used (or a grace period
ends). Files come from the setup
status and this process; no repository is cloned.

What is the same from one fetch to the next is not redone: the template entry is followed in
memory (:class:`~.followed_entry.FollowedEntry`), a cluster's rendered and checked script is
remembered per template version, and the embedded Flux export is read again only when the
file changes. The credentials are new every time.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fplus import bootstrap
from fplus.config_store import uuids
from fplus.config_store.client import BatchOp, ConfigStoreClient, ConfigStoreError, batch
from fplus.templating import TemplateError, render

from ...formats.flux_export import FluxExport, FluxExportError, read_flux_export
from ...model.apps_and_roles import (
    EDGE_SYNC_SECRET,
    FLUX,
    FLUX_SECRET,
    FLUX_VERSION,
    ROLES,
    Role,
)
from ...model.setup_status import SetupStatus
from ..errors import NotFound, Unavailable
from .followed_entry import FollowedEntry

CREDENTIALS = "credentials.yaml"
"""The packed file holding the edge's Secrets."""
FLUX_INSTALL_URL = (f"https://github.com/fluxcd/flux2/releases/download/v{FLUX_VERSION}/"
                    "install.yaml")
REMEMBERED_SCRIPTS = 1024
"""Rendered scripts kept (least recently used dropped): one per cluster being bootstrapped."""


FLUX_REGISTRY = "https://ghcr.io/v2/"
"""Where the pinned Flux release's images come from."""


def image_registry(image: str) -> str:
    """The registry API URL an image reference pulls from (Docker Hub when it names none)."""
    first, _, rest = image.partition("/")
    if rest and ("." in first or ":" in first or first == "localhost"):
        return f"https://{first}/v2/"
    return "https://registry-1.docker.io/v2/"


def reach_urls(git_check: str, config_store_url: str, edge_sync_image: str,
               air_gapped: bool, flux_embedded: bool = False) -> dict[str, str]:
    """The ``reach`` context of the Bootstrap script: what it checks the edge can reach
    before changing anything (registries only when not air-gapped; Flux's release URL
    only when no export is embedded)."""
    download = [] if flux_embedded else [FLUX_INSTALL_URL]
    registries = [] if air_gapped else list(dict.fromkeys(
        [*download, FLUX_REGISTRY, image_registry(edge_sync_image)]))
    return {"git": git_check,
            "config_store": config_store_url.rstrip("/") + "/ping",
            "registries": " ".join(registries)}




def refusal_script(status: int, message: str) -> str:
    """What a refused script fetch answers a shell client: a script that prints the reason
    on stderr and exits 1, so ``curl -sS URL | sh`` fails saying why (the HTTP status stays
    the API's; ``message`` holds no secret, :mod:`..errors`)."""
    line = " ".join(f"bootstrap refused (HTTP {status}): {message}".split())
    quoted = line.replace("'", "'\\''")
    return f"#!/bin/sh\nprintf '%s\\n' '{quoted}' >&2\nexit 1\n"


class ScriptBuilder:
    """Builds bootstrap scripts for ready clusters."""

    def __init__(self, cs: ConfigStoreClient, *, flux_install_file: Path | None = None,
                 wait_timeout: str = "300s", with_credentials: bool = True,
                 rotation_grace: float = 900.0, edge_ca: str | None = None,
                 reach: dict[str, str] | None = None,
                 git_reader: Callable[[str], tuple[str, str]] | None = None) -> None:
        """``reach``: the URLs scripts check first (:func:`reach_urls`; none when absent);
        ``git_reader``: mints the Flux pull credentials of a cluster (user name, secret) on
        a Git host other than ours (None: Flux's Config Store principal gets a password)."""
        self.cs = cs
        self.git_reader = git_reader
        self.reach = reach or {"git": "", "config_store": "", "registries": ""}
        self.edge_ca = edge_ca
        self.rotation_grace = rotation_grace
        self.flux_install_file = flux_install_file
        self.wait_timeout = wait_timeout
        self.with_credentials = with_credentials
        self.template = FollowedEntry(cs, uuids.App.BootstrapScript, uuids.App.BootstrapScript)
        self._lock = threading.Lock()
        self._scripts: OrderedDict[tuple[Any, ...], bootstrap.Script] = OrderedDict()
        self._flux_file: tuple[tuple[int, int], FluxExport] | None = None

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
        script = self._script(cluster, setup)
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

    def _script(self, cluster: str, setup: SetupStatus) -> bootstrap.Script:
        """The rendered, packed script without credentials (remembered per template version
        and cluster); :class:`Unavailable` if the template does not make one."""
        entry, version = self.template.get()
        flux = self._flux_install()
        key = (version, cluster, setup.name, setup.namespace, setup.self_link, flux)
        with self._lock:
            found = self._scripts.get(key) if version is not None else None
            if found is not None:
                self._scripts.move_to_end(key)
                return found
        script = self._render(cluster, setup, entry, flux)
        if version is not None:
            with self._lock:
                self._scripts[key] = script
                while len(self._scripts) > REMEMBERED_SCRIPTS:
                    self._scripts.popitem(last=False)
        return script

    def _render(self, cluster: str, setup: SetupStatus, entry: Any,
                flux: FluxExport | None) -> bootstrap.Script:
        if not isinstance(entry, dict):
            raise Unavailable("no Bootstrap script template is configured")
        context = {"uuid": cluster, "name": setup.name, "namespace": setup.namespace,
                   "files": bootstrap.PLACEHOLDER, "timeout": self.wait_timeout,
                   # the embedded export's own version, else the pinned release's
                   "flux": {"version": flux.version.lstrip("v") if flux else FLUX_VERSION,
                            # an embedded export is applied instead: no URL off this stack
                            "install_url": "" if flux is not None else FLUX_INSTALL_URL,
                            "secret": FLUX_SECRET},
                   "edge_sync": {"credentials_secret": EDGE_SYNC_SECRET},
                   "reach": self.reach}
        files = {"self-link.yaml": setup.self_link or ""}
        if flux is not None:
            files["flux-system.yaml"] = flux.text
        try:
            script = bootstrap.prepare_script(render(entry, context), files)
            if self.with_credentials:  # its name must be free before anything rotates
                script.with_files({CREDENTIALS: ""})
        except TemplateError as exc:
            raise Unavailable(f"the Bootstrap script template does not render: {exc}") from exc
        except bootstrap.BootstrapError as exc:
            raise Unavailable(f"the Bootstrap script template is unusable: {exc}") from exc
        return script

    def _flux_install(self) -> FluxExport | None:
        """The embedded Flux export, read again only when the file changed."""
        if self.flux_install_file is None:
            return None
        stat = self.flux_install_file.stat()
        mark = (stat.st_mtime_ns, stat.st_size)
        cached = self._flux_file
        if cached is not None and cached[0] == mark:
            return cached[1]
        try:
            export = read_flux_export(self.flux_install_file.read_text(),
                                      str(self.flux_install_file))
        except FluxExportError as exc:
            raise Unavailable(f"the Flux install file is unusable: {exc}") from exc
        self._flux_file = (mark, export)
        return export

    def _rotate_credentials(self, cluster: str, setup: SetupStatus) -> str:
        """New passwords for the cluster's principals, as the Secrets manifest: the Config
        Store ones rotated in one batch request (both or neither)."""
        assert setup.name is not None and setup.namespace is not None
        secrets: dict[str, tuple[str, str]] = {}
        rotated: list[tuple[Role, BatchOp]] = []
        for role in ROLES:
            principal = setup.account(role).uuid
            if not principal:
                raise NotFound(f"cluster {cluster} has no {role.key} account yet")
            if role == FLUX and self.git_reader is not None:
                secrets[role.secret] = self.git_reader(cluster)
            else:
                rotated.append((role, rotation_op(principal, self.rotation_grace)))
        results = self.cs.batch([op for _, op in rotated])
        for (role, _), result in zip(rotated, results, strict=True):
            password = result.body.get("password") if isinstance(result.body, dict) else None
            if not isinstance(password, str):
                raise ConfigStoreError(result.status, result.body,
                                       "a password rotation answered no password")
            secrets[role.secret] = (role.principal_name(setup.name), password)
        return bootstrap.credentials_manifest(setup.namespace, secrets, self.edge_ca)


def rotation_op(principal: str, grace: float) -> BatchOp:
    """The batch operation giving ``principal`` a new server-generated password (in its
    result's body), the previous one kept for ``grace`` seconds or until the new one is
    used: :meth:`ConfigStoreClient.generate_password` with ``previous_valid_for``."""
    return batch.generate_password(principal, previous_valid_for=grace)
