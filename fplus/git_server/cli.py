"""``git-server`` command: serve per-cluster Git repositories over smart HTTP.

``seed`` needs administrator credentials (``FPLUS_USER`` / ``FPLUS_PASSWORD``): it sets up
the Git repository configuration app and the ``git-server`` principal, whose password it
keeps in the data dir. ``serve`` logs in as that principal (see :func:`_login`).
"""

from __future__ import annotations

from fplus.serving.green import patch_all

patch_all()  # before requests/ssl are imported: the server runs on gevent

import argparse  # noqa: E402
import functools  # noqa: E402
import logging  # noqa: E402
import os  # noqa: E402
from pathlib import Path  # noqa: E402
from urllib.parse import urlsplit  # noqa: E402

from fplus.config_store import uuids  # noqa: E402
from fplus.config_store.client import (  # noqa: E402
    Access,
    ConfigStoreClient,
    ConfigStoreError,
    PasswordFileMissing,
    as_admin,
)
from fplus.git.repo.remote import trust_ca_file  # noqa: E402
from fplus.serving import (  # noqa: E402
    Login,
    Served,
    bind_port,
    configure_logging,
    offload,
    serve,
    warn_if_seeded,
)
from fplus.serving.addresses import is_wildcard  # noqa: E402
from fplus.serving.boot import ServiceBoot  # noqa: E402
from fplus.serving.cors import add_cors_options, cors_origins, enable_cors  # noqa: E402
from fplus.serving.login import ServiceCredentials, add_rotate_option  # noqa: E402
from fplus.serving.notify_watch import WatchSettings  # noqa: E402
from fplus.serving.tls import add_tls_options, require_client_ca, scheme, server_tls  # noqa: E402

from ._domain import setup  # noqa: E402
from ._domain.mirror_urls import MirrorPolicy  # noqa: E402
from ._domain.mirrors import Mirrors  # noqa: E402
from ._domain.registry import RepoRegistry  # noqa: E402
from ._domain.storage import RepoStorage  # noqa: E402
from ._http.app import create_app  # noqa: E402
from ._http.context import GitServer  # noqa: E402
from ._http.push_body import DEFAULT_LIMIT  # noqa: E402

PROG = "git-server"
log = logging.getLogger("git_server")


BOOT = ServiceBoot(PROG, (ConfigStoreError,), log)


def _seed_store(url: str, data_dir: Path, rotate: bool = False) -> Path:
    """Seed as the administrator of FPLUS_USER / FPLUS_PASSWORD; the password file made
    (see :func:`fplus.config_store.client.ensure_service_principal` for ``rotate``)."""
    def seed(admin: ConfigStoreClient) -> Path:
        return setup.seed(admin, data_dir, rotate=rotate)

    return BOOT.seed(url, lambda: as_admin(url, seed), plain=(PasswordFileMissing,))


def _login(url: str, data_dir: Path) -> Login:
    """How ``serve`` logs in, never as the administrator (see :mod:`fplus.serving.login`)."""
    return BOOT.login(url, setup.PRINCIPAL_NAME, setup.password_file(data_dir),
                      lambda: _seed_store(url, data_dir))


def _connect(url: str, login: Login) -> ConfigStoreClient:
    """The Git server's own client, logged in; one line and exit if it cannot be."""
    client = ConfigStoreClient(url, login.user, login.password)
    BOOT.connect(url, login, lambda: client.connect(wait=5.0))
    return client


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
        path = _seed_store(url, args.data_dir, args.rotate_password)
        print(f"Seeded the Config Store at {url} for the Git server; the password of its "
              f"principal {setup.PRINCIPAL_NAME} is in {path}", flush=True)
        return
    tls = server_tls(args, PROG)
    if args.mirror_ca_file is not None and not args.mirror_ca_file.is_file():
        raise SystemExit(f"{PROG}: --mirror-ca-file {args.mirror_ca_file}: no such file")
    origins = cors_origins(args)
    listener = bind_port(args.host, args.port, PROG)
    login = _login(url, args.data_dir)
    storage = RepoStorage(args.data_dir)
    with _connect(url, login) as client:  # checked here; each worker logs in itself
        print(f"Git server listening on {scheme(tls)}://{args.host}:{args.port}  (repos: "
              f"{storage.root}, Config Store: {args.config_store})", flush=True)
        warn_if_seeded(login, PROG)
        public = args.public_url or (
            None if is_wildcard(args.host) else f"{scheme(tls)}://{args.host}:{args.port}")
        BOOT.advertise(public, lambda at: client.advertise_service(uuids.Service.Git, at))
    own = {f"{args.host}:{args.port}", *([urlsplit(public).netloc] if public else [])}
    serve(functools.partial(_worker, args, url, login, storage, own, origins), args.host,
          args.port, listener=listener, tls=tls)


if __name__ == "__main__":
    main()
