"""``cluster-manager`` command: seed the Config Store, run the Cluster Manager service, or the
all-in-one stack.

``seed`` is the one step that needs administrator credentials (``FPLUS_USER`` /
``FPLUS_PASSWORD``): it sets up the Config Store and the ``cluster-manager`` principal, whose
password it keeps in the data dir. ``serve`` logs in as that principal
(:meth:`fplus.serving.startup.service.CentralService.login`).
"""

from __future__ import annotations

import argparse
import functools
import logging
import os
from pathlib import Path
from typing import Any

from fplus.config_store import uuids
from fplus.config_store.client import (
    ConfigStoreClient,
    ConfigStoreError,
    PasswordFileMissing,
    as_admin,
)
from fplus.serving import (
    Login,
    bind_port,
    configure_logging,
    serve,
    warn_if_seeded,
)
from fplus.serving.background import offload
from fplus.serving.http.cors import add_cors_options, cors_origins
from fplus.serving.http.tls import (
    ServerTls,
    TlsFileError,
    add_tls_options,
    client_ca_file,
    require_client_ca,
    scheme,
    server_tls,
)
from fplus.serving.startup import argtypes
from fplus.serving.startup.boot import ServiceBoot
from fplus.serving.startup.login import add_rotate_option
from fplus.serving.startup.service import CentralService

from .commands import backup, escrow_keys, git_provider
from .commands import import_commands as imports
from .commands.serve_worker import Plan, build
from .commands.up import Addresses, EdgeOptions, up
from .db import Database, DatabaseError, open_database
from .leader import MODES, make_lease, new_identity
from .model.settings import Settings
from .reconcile.job import Groups
from .reconcile.manager_account import PRINCIPAL_NAME, password_file
from .reconcile.seeding import NotSeeded, seed_with_account, service_config
from .schema import statements
from .tunnel import options as tunnel_options

PROG = "cluster-manager"
log = logging.getLogger("cluster_manager")


SERVICE = CentralService(
    ServiceBoot(PROG, (ConfigStoreError,), log), PRINCIPAL_NAME, password_file, as_admin,
    lambda admin, data_dir, rotate: seed_with_account(admin, data_dir, rotate=rotate),
    ConfigStoreClient, plain=(PasswordFileMissing,))


def _connect(url: str, login: Login) -> tuple[ConfigStoreClient, dict[str, Any]]:
    """The Cluster Manager's own client, logged in, and its ServiceConfig entry; one line
    and exit if either cannot be had."""
    def config(client: ConfigStoreClient) -> tuple[ConfigStoreClient, dict[str, Any]]:
        try:
            return client, service_config(client)
        except NotSeeded as exc:
            raise SystemExit(f"{PROG}: {exc} at {url}: run `{PROG} seed` first") from None

    return SERVICE.connect_then(url, login, config, statuses={
        403: f"{login.user} may not read its configuration at {url}: run `{PROG} seed` again"})


_seconds = argtypes.number(0, 86400, "a number of seconds")
_days = argtypes.number(0, 36500, "a number of days")
_count = argtypes.whole()
PROCESSES_ENV = "FPLUS_CM_PROCESSES"
"""The default of ``serve --processes``."""
_processes = argtypes.whole(1, 64)


def _edge_ca(path: Path | None) -> str | None:
    """The PEM text of ``--edge-ca-file`` (default ``FPLUS_CA_FILE``); one line and exit if
    it is unreadable or holds no certificate."""
    try:
        found = str(path) if path is not None else client_ca_file()
        if found is None:
            return None
        text = Path(found).read_text()
    except (OSError, UnicodeDecodeError, TlsFileError) as exc:
        raise SystemExit(f"{PROG}: --edge-ca-file: {exc}") from None
    if "-----BEGIN CERTIFICATE-----" not in text:
        raise SystemExit(f"{PROG}: --edge-ca-file {found}: holds no PEM certificate")
    return text


def _settings(args: argparse.Namespace, tls: ServerTls | None) -> Settings:
    return Settings(
        config_store_url=args.config_store, git_url=args.git, data_dir=args.data_dir,
        git_repos=args.git_repos, git_internal_url=args.git_internal,
        organisation=args.organisation, git_provider=args.git_provider,
        gitea_url=args.gitea_url, gitea_org=args.gitea_org, gitea_teardown=args.gitea_teardown,
        edge_config_store_url=args.edge_config_store, edge_sync_image=args.edge_sync_image,
        edge_cluster_manager_url=args.edge_cluster_manager,
        workers=args.workers, backoff_initial=args.backoff,
        external_url=args.external_url or f"{scheme(tls)}://{args.host}:{args.port}",
        edge_ca=_edge_ca(args.edge_ca_file),
        bootstrap_token_ttl=args.bootstrap_token_ttl, public_bootstrap=args.public_bootstrap,
        flux_install_file=args.flux_install_file, air_gapped=args.air_gapped,
        body_limit=args.body_limit, cluster_quota=args.cluster_quota,
        rotation_grace=args.rotation_grace, teardown_timeout=args.teardown_timeout,
        edge_stale_after=args.edge_stale_after, database_url=args.database,
        leader_election=args.leader_election,
        lease_name=args.lease_name, lease_namespace=args.lease_namespace,
        lease_duration=args.lease_duration, lease_renew=args.lease_renew,
        lease_retry=args.lease_retry, audit_retention_days=args.audit_retention)


def _database(settings: Settings) -> Database:
    """The Cluster Manager's database with its tables; one line and exit if unusable."""
    try:
        db = open_database(settings.database)
        db.prepare(statements(db.dialect))
    except DatabaseError as exc:
        raise SystemExit(f"{PROG}: {exc}") from None
    return db


def _lease(settings: Settings, db: Database) -> Any:
    """The leader lease (None: election off); one line and exit if it cannot work."""
    try:
        return make_lease(settings, db)
    except Exception as exc:  # bad lease timings, no Kubernetes configuration
        raise SystemExit(f"{PROG}: --leader-election {settings.leader_election}: "
                         f"{' '.join(str(exc).split())}") from None


def _serve(args: argparse.Namespace) -> None:
    """Check everything in the master; each worker builds the service
    (:mod:`.commands.serve_worker`)."""
    tls = server_tls(args, PROG)
    origins = cors_origins(args)
    ca_file = require_client_ca(PROG)
    settings = _settings(args, tls)
    offload.use_gevent_threadpool()  # repository creation off the hub
    if settings.flux_install_file is not None and not settings.flux_install_file.is_file():
        raise SystemExit(f"--flux-install-file {settings.flux_install_file}: no such file")
    if settings.air_gapped and settings.flux_install_file is None:
        raise SystemExit(f"{PROG}: --air-gapped needs --flux-install-file (a `flux install "
                         "--export` whose images your edges' registry serves)")
    gitea_token = git_provider.gitea_token(args, settings, PROG, ca_file)
    listener = bind_port(args.host, args.port, PROG)
    url = settings.config_store_url.rstrip("/")
    keyring = escrow_keys.keyring_of(args, PROG)
    db = _database(settings)  # before anything is written or asked of the Config Store
    _lease(settings, db)
    db.close()
    login = SERVICE.login(url, settings.data_dir)
    cs, service = _connect(url, login)
    plan = Plan(settings, login, ca_file, keyring, Groups.from_service_config(service),
                new_identity(), args.reseal_interval, origins,
                functools.partial(_lease, settings), gitea_token, tunnel_options.options_of(args))
    with cs:
        print(f"Cluster Manager listening on {scheme(tls)}://{args.host}:{args.port}  "
              f"(Config Store {settings.config_store_url}, Git {git_provider.where(settings)}, "
              f"database {db.description}, identity {plan.identity}, secret escrow "
              f"{'on' if keyring is not None else 'off'})", flush=True)
        warn_if_seeded(login, PROG)
        SERVICE.boot.advertise(settings.external_url or "",
                       lambda at: cs.advertise_service(uuids.Service.Clusters, at))
    serve(functools.partial(build, plan), args.host, args.port, listener=listener, tls=tls,
          workers=args.processes)


def _seed(args: argparse.Namespace) -> None:
    require_client_ca(PROG)
    url = args.config_store.rstrip("/")
    path = SERVICE.seed(url, args.data_dir, args.rotate_password)
    print(f"Seeded the Config Store at {url} for the Cluster Manager; the password of its "
          f"principal {PRINCIPAL_NAME} is in {path}", flush=True)


def _import(args: argparse.Namespace) -> None:
    ca_file = require_client_ca(PROG)
    url = args.config_store.rstrip("/")
    login = SERVICE.login(url, args.data_dir)
    cs, _ = _connect(url, login)  # the central repos are seeded, and the login works
    print(imports.run_import(args, cs, login.user, login.password, ca_file), flush=True)


def _store_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config-store", default=os.environ.get("CONFIG_STORE_URL",
                                                                "http://127.0.0.1:8701"))
    parser.add_argument("--data-dir", type=Path, required=True,
                        help=f"where {PRINCIPAL_NAME}'s password file is kept")


def _replica_options(parser: argparse.ArgumentParser) -> None:
    """Where bootstrap tokens and the leader lease live, and how replicas elect a leader."""
    parser.add_argument("--database", default=os.environ.get("FPLUS_DATABASE"),
                        help="sqlite:///FILE or postgresql://USER[:PASSWORD]@HOST:PORT/DB, "
                             "shared by every replica, and may be the Config Store's (default: "
                             "DATA_DIR/bootstrap-tokens.sqlite; env FPLUS_DATABASE; libpq's "
                             "PGPASSWORD/PGPASSFILE keep the password off the command line)")
    parser.add_argument("--leader-election", choices=MODES, default="auto",
                        help="who reconciles: a Kubernetes Lease, a lease in the database, or "
                             "off (always this replica). auto: kubernetes in a pod, database "
                             "when --database is given, else off")
    parser.add_argument("--lease-name", default=Settings.lease_name)
    parser.add_argument("--lease-namespace", help="the Kubernetes Lease's namespace "
                                                  "(default: the pod's)")
    parser.add_argument("--lease-duration", type=_seconds, default=Settings.lease_duration,
                        help="seconds the leader holds the lease after renewing it")
    parser.add_argument("--lease-renew", type=_seconds, default=Settings.lease_renew,
                        help="seconds between the leader's renewals")
    parser.add_argument("--lease-retry", type=_seconds, default=Settings.lease_retry,
                        help="seconds between a standby's attempts to take the lease")


def build_parser() -> argparse.ArgumentParser:
    """The ``cluster-manager`` command line (deploy manifests are checked against it)."""
    parser = argparse.ArgumentParser(prog="cluster-manager", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    seed = sub.add_parser("seed", help="set up the Config Store and the Cluster Manager's "
                                       "principal (administrator credentials)")
    _store_options(seed)
    add_rotate_option(seed, PRINCIPAL_NAME)
    run = sub.add_parser("serve", help="run the Cluster Manager as its own principal")
    _store_options(run)
    run.add_argument("--git", default="http://127.0.0.1:8702",
                     help="Git server base URL, as edges reach it")
    run.add_argument("--git-internal", metavar="URL",
                     help="Git server base URL as this service reaches it, when not --git "
                          "(e.g. a Kubernetes Service where edges use an Ingress)")
    run.add_argument("--git-repos", type=Path,
                     help="the Git server's repos directory, if on this machine")
    git_provider.add_options(run)
    run.add_argument("--host", default="127.0.0.1")
    run.add_argument("--port", type=int, default=8700)
    run.add_argument("--organisation", default="ACS", help="Sparkplug group prefix")
    run.add_argument("--edge-config-store", help="Config Store URL as edges reach it")
    run.add_argument("--edge-cluster-manager", help="this service's URL as edges reach it, for "
                                                    "their tunnels (default: --external-url)")
    run.add_argument("--edge-sync-image", default=Settings.edge_sync_image)
    run.add_argument("--workers", type=int, default=8, help="clusters reconciled at once")
    run.add_argument("--processes", type=_processes,
                     default=os.environ.get(PROCESSES_ENV, "1"),
                     help="worker processes serving the API (sealing, bootstrap scripts, "
                          "…) on the one port, each as a replica on this one database; "
                          f"one of them reconciles (default 1; env {PROCESSES_ENV})")
    run.add_argument("--backoff", type=float, default=2.0, help="first retry delay (s)")
    run.add_argument("--external-url",
                     help="this service's URL as users and edges reach it "
                          "(default http://HOST:PORT)")
    run.add_argument("--bootstrap-token-ttl", type=float, default=3600.0,
                     help="seconds a bootstrap URL stays valid")
    run.add_argument("--audit-retention", type=_days, default=Settings.audit_retention_days,
                     help="days an audit row is kept (0: forever)")
    run.add_argument("--rotation-grace", type=_seconds, default=Settings.rotation_grace,
                     help="seconds an edge's previous passwords stay valid after a script "
                          "rotated them (until the new ones are used)")
    run.add_argument("--teardown-timeout", type=_seconds, default=Settings.teardown_timeout,
                     help="seconds a teardown waits for the edge to apply its teardown commit")
    run.add_argument("--edge-stale-after", type=_seconds, default=Settings.edge_stale_after,
                     help="seconds after its last report at which an edge counts as Stale "
                          "(its phase; a rollout's offline gate)")
    run.add_argument("--cluster-quota", type=_count, default=Settings.cluster_quota,
                     help="clusters one principal may have created through the API and "
                          "not deleted (0: no quota; the root principal is exempt)")
    run.add_argument("--public-bootstrap", action="store_true",
                     help="ACS-style bootstrap URLs without a token; the script then "
                          "carries no credentials")
    run.add_argument("--flux-install-file", type=Path,
                     help="`flux install --export` output to embed in bootstrap scripts "
                          "(air-gapped edges) instead of the pinned release URL")
    run.add_argument("--air-gapped", action="store_true",
                     help="edges reach nothing but this stack: Sealed Secrets from the shared "
                          "charts repo (import-chart it), Flux from --flux-install-file")
    run.add_argument("--body-limit", type=int, default=1024 * 1024,
                     help="largest request body in bytes (413 above)")
    run.add_argument("--edge-ca-file", type=Path, metavar="FILE",
                     help="PEM CA certificate(s) edges need to trust this stack's HTTPS "
                          "certificates; bootstrap scripts carry it to Flux and Edge Sync "
                          "(default: FPLUS_CA_FILE; none: edges use their system CAs)")
    add_tls_options(run)
    add_cors_options(run)
    _replica_options(run)
    escrow_keys.add_option(run)
    tunnel_options.add_options(run)
    imports.add_parsers(sub, _store_options)
    escrow_keys.add_parsers(sub)
    backup.add_parsers(sub, _store_options)
    stack = sub.add_parser("up", help="run the all-in-one stack on one host")
    stack.add_argument("--data-dir", type=Path, default=Path(".data"))
    stack.add_argument("--port", type=int, default=8700,
                       help="Cluster Manager port; Config Store on P+1, Git server on P+2")
    stack.add_argument("--advertise", metavar="HOST",
                       help="the host name or IP address edges reach this host at; every URL "
                            "given to an edge names it (default 127.0.0.1: this machine only)")
    stack.add_argument("--listen", metavar="ADDRESS",
                       help="the address the services listen on (default: the --advertise "
                            "address if it is an IP address, 0.0.0.0 for a name, else "
                            "127.0.0.1)")
    stack.add_argument("--flux-install-file", type=Path,
                       help="`flux install --export` output for bootstrap scripts to apply "
                            "(air-gapped edges)")
    stack.add_argument("--edge-sync-image", help="the Edge Sync image edges run")
    stack.add_argument("--air-gapped", action="store_true",
                       help="edges reach nothing but this stack (see serve --air-gapped)")
    add_cors_options(stack)
    stack.add_argument("--tls", action="store_true",
                       help="serve HTTPS with certificates from a local CA kept in "
                            "DATA_DIR/tls (bootstrap scripts carry the CA to edges)")
    return parser


def main(argv: list[str] | None = None) -> None:
    """Entry point."""
    args = build_parser().parse_args(argv)
    configure_logging()
    if args.command == "up":
        up(args.data_dir, args.port, Addresses.parse(args.advertise, args.listen),
           EdgeOptions(args.flux_install_file, args.edge_sync_image, args.air_gapped),
           tls=args.tls, cors=tuple(cors_origins(args)))
    elif args.command == "seed":
        _seed(args)
    elif args.command in imports.COMMANDS:
        _import(args)
    elif args.command == escrow_keys.COMMAND:
        print(escrow_keys.run(args, PROG), flush=True)
    elif args.command in backup.COMMANDS:
        require_client_ca(PROG)
        print(backup.run(args, PROG), flush=True)
    else:
        _serve(args)


if __name__ == "__main__":
    main()
