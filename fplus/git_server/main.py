"""``git-server`` command: serve per-cluster Git repositories over smart HTTP.

``seed`` needs administrator credentials (``FPLUS_USER`` / ``FPLUS_PASSWORD``): it sets up
the Git repository configuration app and the ``git-server`` principal, whose password it
keeps in the data dir. ``serve`` logs in as that principal
(:meth:`fplus.serving.startup.service.CentralService.login`).
"""

from __future__ import annotations

import argparse
import functools
import logging
import os
from pathlib import Path
from urllib.parse import urlsplit

from fplus.config_store import uuids
from fplus.config_store.client import (
    Access,
    ConfigStoreClient,
    ConfigStoreError,
    PasswordFileMissing,
    as_admin,
)
from fplus.git.repo.remote import trust_ca_file
from fplus.git_server._notify.watches import WatchSettings
from fplus.serving import (
    Login,
    Served,
    bind_port,
    configure_logging,
    serve,
    warn_if_seeded,
)
from fplus.serving.background import offload
from fplus.serving.http.addresses import is_wildcard
from fplus.serving.http.cors import add_cors_options, cors_origins, enable_cors
from fplus.serving.http.tls import add_tls_options, require_client_ca, scheme, server_tls
from fplus.serving.startup.boot import ServiceBoot
from fplus.serving.startup.login import ServiceCredentials, add_rotate_option
from fplus.serving.startup.service import CentralService

from ._domain import setup
from ._domain.mirror_urls import MirrorPolicy
from ._domain.mirrors import Mirrors
from ._domain.registry import RepoRegistry
from ._domain.storage import RepoStorage
from ._http.app import create_app
from ._http.context import GitServer
from ._http.push_body import DEFAULT_LIMIT

PROG = "git-server"
log = logging.getLogger("git_server")


SERVICE = CentralService(
    ServiceBoot(PROG, (ConfigStoreError,), log), setup.PRINCIPAL_NAME, setup.password_file,
    as_admin, lambda admin, data_dir, rotate: setup.seed(admin, data_dir, rotate=rotate),
    ConfigStoreClient, plain=(PasswordFileMissing,))


def _store_options(parser: argparse.ArgumentParser, data_help: str) -> None:
    parser.add_argument("--data-dir", type=Path, required=True, help=data_help)
    parser.add_argument("--config-store", default=os.environ.get("CONFIG_STORE_URL",
                                                                "http://127.0.0.1:8701"))


def build_parser() -> argparse.ArgumentParser:
    """The ``git-server`` command line (deploy manifests are checked against it)."""
    parser = argparse.ArgumentParser(prog="git-server", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    seed = sub.add_parser("seed", help="set up the Config Store and the Git server's "
                                       "principal (administrator credentials)")
    _store_options(seed, f"where {setup.PRINCIPAL_NAME}'s password file is kept")
    add_rotate_option(seed, setup.PRINCIPAL_NAME)
    run = sub.add_parser("serve", help="serve repositories over smart HTTP")
    _store_options(run, "repositories and the password file live here")
    run.add_argument("--host", default="127.0.0.1")
    run.add_argument("--port", type=int, default=8702)
    run.add_argument("--acl-cache-seconds", type=float, default=5.0,
                     help="how long a principal's credentials and ACL are cached")
    run.add_argument("--notify-refresh-seconds", type=float, default=1.0,
                     help="how often notify/v2 watches are computed again when no push or "
                          "repo configuration change is signalled")
    run.add_argument("--notify-recheck-seconds", type=float, default=30.0,
                     help="how often a notify/v2 connection's token is checked again "
                          "(closed with 1008 once it is revoked or expired)")
    run.add_argument("--notify-max-connections", type=int,
                     default=WatchSettings.max_connections,
                     help="notify/v2 connections one principal may hold, through any of its "
                          "tokens (more are answered 429)")
    run.add_argument("--secrets-dir", type=Path,
                     help="where the credential files auto-pull mirrors name live "
                          "(auth.secretRef; default DATA_DIR/secrets)")
    run.add_argument("--mirror-http-host", action="append", default=[], metavar="HOST",
                     help="a host mirrors may fetch from over plain http or git:// "
                          "(repeatable; default none: https only); never with credentials")
    run.add_argument("--mirror-allow-private", action="store_true",
                     help="let mirrors reach loopback, link-local and private addresses "
                          "(refused by default)")
    run.add_argument("--mirror-ca-file", type=Path, metavar="FILE",
                     help="PEM CA certificate(s) mirror fetches trust instead of the "
                          "system's (an internal upstream)")
    run.add_argument("--public-url",
                     help="where clients reach this server, advertised in the Directory "
                          "(default: scheme://host:port unless the host is a wildcard)")
    run.add_argument("--push-limit", type=int, default=DEFAULT_LIMIT, metavar="BYTES",
                     help="the most one push may send (413 above, nothing written; default "
                          f"{DEFAULT_LIMIT // (1024 * 1024)} MiB)")
    add_tls_options(run)
    add_cors_options(run)
    return parser


def _worker(args: argparse.Namespace, url: str, login: Login, storage: RepoStorage,
            own: set[str], origins: list[str]) -> Served:
    """In each gunicorn worker: a Config Store client of its own (it logs in at its first
    request; its password file read again at each login), an empty ACL cache, and the repo
    registry, which reads the configured repos when it starts."""
    credentials = ServiceCredentials(login, PROG)
    client = ConfigStoreClient(url, credentials=credentials, login_refused=credentials.refused)
    registry = RepoRegistry(client)
    server = GitServer(Access(client, args.acl_cache_seconds), registry, storage,
                       push_limit=args.push_limit)
    app = create_app(server, WatchSettings(refresh=args.notify_refresh_seconds,
                                           recheck=args.notify_recheck_seconds,
                                           max_connections=args.notify_max_connections))
    enable_cors(app, origins)
    policy = MirrorPolicy.of(args.mirror_http_host, args.mirror_allow_private, own)
    mirrors = Mirrors(registry.entries, storage.ensure,
                      args.secrets_dir or args.data_dir / "secrets", policy)
    if args.mirror_ca_file is not None:
        trust_ca_file(str(args.mirror_ca_file))

    def start() -> None:
        offload.use_gevent_threadpool()  # mirror fetches off the hub
        registry.start()
        mirrors.start()

    return Served(app, start)


def main(argv: list[str] | None = None) -> None:
    """Entry point."""
    args = build_parser().parse_args(argv)
    configure_logging()
    require_client_ca(PROG)
    url = args.config_store.rstrip("/")
    if args.command == "seed":
        path = SERVICE.seed(url, args.data_dir, args.rotate_password)
        print(f"Seeded the Config Store at {url} for the Git server; the password of its "
              f"principal {setup.PRINCIPAL_NAME} is in {path}", flush=True)
        return
    tls = server_tls(args, PROG)
    if args.mirror_ca_file is not None and not args.mirror_ca_file.is_file():
        raise SystemExit(f"{PROG}: --mirror-ca-file {args.mirror_ca_file}: no such file")
    origins = cors_origins(args)
    listener = bind_port(args.host, args.port, PROG)
    login = SERVICE.login(url, args.data_dir)
    storage = RepoStorage(args.data_dir)
    with SERVICE.connect(url, login) as client:  # checked here; each worker logs in itself
        print(f"Git server listening on {scheme(tls)}://{args.host}:{args.port}  (repos: "
              f"{storage.root}, Config Store: {args.config_store})", flush=True)
        warn_if_seeded(login, PROG)
        public = args.public_url or (
            None if is_wildcard(args.host) else f"{scheme(tls)}://{args.host}:{args.port}")
        SERVICE.boot.advertise(public, lambda at: client.advertise_service(uuids.Service.Git, at))
    own = {f"{args.host}:{args.port}", *([urlsplit(public).netloc] if public else [])}
    serve(functools.partial(_worker, args, url, login, storage, own, origins), args.host,
          args.port, listener=listener, tls=tls)


if __name__ == "__main__":
    main()
