"""``serve``'s Git provider options (``--git-provider ours|gitea``) and the start-up check of a
Gitea: its token is read from a file or the environment (never the command line), and a
token Gitea refuses, or one that may not manage the organisation, stops the service with
one line saying so. A Gitea that does not answer yet is waited for by the steps that need it.
"""

from __future__ import annotations

import argparse
import logging
import os
from pathlib import Path

from fplus.git.hosts.gitea import GiteaRefused, check_access
from fplus.git.hosts.gitea_api import GiteaClient, GiteaError
from fplus.git.hosts.host import GIT_PROVIDERS, GITEA, OURS

from ..model.settings import Settings

TOKEN_ENV = "FPLUS_GITEA_TOKEN"  # noqa: S105  (the variable's name)
log = logging.getLogger(__name__)


def add_options(parser: argparse.ArgumentParser) -> None:
    """The provider options of ``serve``."""
    parser.add_argument("--git-provider", choices=GIT_PROVIDERS, default=OURS,
                        help="who hosts the repos: our Git server (--git), or a Gitea "
                             "through its REST API (--gitea-url)")
    parser.add_argument("--gitea-url", metavar="URL",
                        help="the Gitea's base URL, as edges and this service reach it")
    parser.add_argument("--gitea-org", default=Settings.gitea_org,
                        help="the Gitea organisation holding the repos (made if missing)")
    parser.add_argument("--gitea-token-file", type=Path, metavar="FILE",
                        help=f"file holding the Gitea token (default: env {TOKEN_ENV}); a "
                             "site administrator's, scopes write:admin, write:organization, "
                             "write:repository, read:user")
    parser.add_argument("--gitea-teardown", choices=("archive", "delete"),
                        default=Settings.gitea_teardown,
                        help="what a deleted cluster's Gitea repo becomes")


def where(settings: Settings) -> str:
    """The repos' host, for the start-up line."""
    if settings.git_provider == GITEA:
        return f"Gitea {settings.gitea_url} org {settings.gitea_org}"
    return settings.git_url


def gitea_token(args: argparse.Namespace, settings: Settings, prog: str,
                ca_file: str | None) -> str | None:
    """The Gitea token (None with our Git server), checked against Gitea when it answers;
    one line and exit if it is missing or Gitea refuses it."""
    if settings.git_provider != GITEA:
        return None
    if not settings.gitea_url:
        raise SystemExit(f"{prog}: --git-provider gitea needs --gitea-url")
    token = _read_token(args.gitea_token_file, prog)
    client = GiteaClient(settings.gitea_url, token, verify=ca_file or True)
    try:
        check_access(client, settings.gitea_org)
    except GiteaRefused as exc:
        raise SystemExit(f"{prog}: {exc}") from None
    except GiteaError as exc:
        if exc.status != 0:
            raise SystemExit(f"{prog}: {exc}") from None
        log.warning("%s; commissioning waits for it", exc)
    return token


def _read_token(path: Path | None, prog: str) -> str:
    if path is not None:
        try:
            token = path.read_text().strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise SystemExit(f"{prog}: --gitea-token-file: {exc}") from None
        where = f"--gitea-token-file {path}"
    else:
        token, where = os.environ.get(TOKEN_ENV, "").strip(), f"env {TOKEN_ENV}"
    if not token:
        raise SystemExit(f"{prog}: --git-provider gitea needs a token ({where} is empty; "
                         f"give --gitea-token-file FILE or set {TOKEN_ENV})")
    return token
