"""``config-store`` command: serve the Config Store."""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
from pathlib import Path

from fplus.serving import Served, bind_port, configure_logging, serve
from fplus.serving.background import offload
from fplus.serving.http.cors import add_cors_options, cors_origins, enable_cors
from fplus.serving.http.tls import add_tls_options, scheme, server_tls
from fplus.serving.startup import argtypes
from fplus.serving.startup.boot import ServiceBoot

from ._domain.core.credentials import password_check_rate, password_hasher
from ._domain.notify import NotifyLimits
from ._domain.store import Store, UnusableDatabase, check_database, open_store
from ._http.app import Settings, create_app
from ._http.gate import AdmissionSettings
from ._http.notify_ws import NotifySettings


def _follow_other_replicas(store: Store) -> None:
    """In the serving process: apply what other replicas write to a shared database."""
    if store.replication is not None:
        store.replication.start()


BOOT = ServiceBoot("config-store")


def _one_line() -> contextlib.AbstractContextManager[None]:
    """An unusable database or ``--database`` URL as one line and exit."""
    return BOOT.one_line(plain=(UnusableDatabase, ValueError))


def _prepare(args: argparse.Namespace, url: str) -> None:
    """Before serving, in the master: the settings and the database checked (its schema
    created or migrated), the welcome printed. Nothing of the store is loaded here: the
    worker loads it once, so a replica answers ``/ping`` after one load, not two."""
    with _one_line():
        if args.database_pool < 2:
            raise ValueError("--database-pool must be at least 2 (a write and a read)")
        password_hasher()  # an unknown FPLUS_ARGON2_PROFILE: one line, nothing served
        description = check_database(args.data_dir, args.database, args.durable_commits)
    _print_welcome(url, args.data_dir, description)


def _worker(args: argparse.Namespace, origins: list[str]) -> Served:
    """In each gunicorn worker: the store loaded from the database as it is now, seeded and
    its root principal ensured, and its app."""
    with _one_line():
        store = open_store(args.data_dir, os.environ.get("FPLUS_ADMIN_PASSWORD"),
                           args.database, args.database_pool, args.durable_commits)
    app = create_app(store, Settings(body_limit=args.body_limit,
                                   batch_max_operations=args.batch_max_operations,
                                   notify=_notify_settings(args),
                                   admission=_admission_settings(args)))
    enable_cors(app, origins)
    return Served(app, on_start=lambda: _follow_other_replicas(store))


def _print_welcome(url: str, data_dir: Path, description: str) -> None:
    if os.environ.get("FPLUS_ADMIN_PASSWORD"):
        where, shell = "from $FPLUS_ADMIN_PASSWORD", "$FPLUS_ADMIN_PASSWORD"
    else:
        path = data_dir / "admin-password"
        where, shell = f"in {path}", f"$(cat {path})"
    print(f"""Config Store listening on {url}  (database: {description})
  root principal: admin, password {where}
  try:  curl -u "admin:{shell}" {url}/v2/app
  API:  {url}/openapi.yaml  ·  notify/v2 WebSocket: {url.replace("http", "ws", 1)}/notify/v2
""", flush=True)


def _notify_flags(run: argparse.ArgumentParser) -> None:
    limits, ws = NotifyLimits(), NotifySettings()
    flag = run.add_argument_group("notify/v2 limits").add_argument
    flag("--notify-queue-bytes", type=int, default=limits.queue_bytes,
         help="bytes of updates waiting for one client before it is dropped as behind")
    flag("--notify-queue-events", type=int, default=limits.queue_events,
         help="updates waiting for one client before it is dropped as behind")
    flag("--notify-max-subscriptions", type=int, default=limits.max_subscriptions,
         help="subscriptions per connection (more are answered 429)")
    flag("--notify-max-connections", type=int, default=limits.max_connections,
         help="notify connections per principal (more are answered 429)")
    flag("--notify-max-principal-subscriptions", type=int,
         default=limits.max_principal_subscriptions,
         help="subscriptions per principal over all its connections (more are answered 429)")
    flag("--notify-send-timeout", type=float, default=ws.send_timeout,
         help="seconds a client may accept nothing of a write before it is dropped")
    flag("--notify-auth-timeout", type=float, default=ws.auth_timeout,
         help="seconds a new connection has to send its Bearer token")
    flag("--notify-message-bytes", type=int, default=ws.message_bytes,
         help="largest client message after authentication")


def _notify_settings(args: argparse.Namespace) -> NotifySettings:
    limits = NotifyLimits(queue_bytes=args.notify_queue_bytes,
                          queue_events=args.notify_queue_events,
                          max_subscriptions=args.notify_max_subscriptions,
                          max_connections=args.notify_max_connections,
                          max_principal_subscriptions=args.notify_max_principal_subscriptions)
    return NotifySettings(limits=limits, send_timeout=args.notify_send_timeout,
                          auth_timeout=args.notify_auth_timeout,
                          message_bytes=args.notify_message_bytes)


def _admission_flags(run: argparse.ArgumentParser) -> None:
    admit = AdmissionSettings()
    flag = run.add_argument_group("admission control").add_argument
    flag("--admit-rate", type=_rate, default=admit.session_rate,
         help="new notify/v2 WebSocket handshakes and POST /token logins let in a second "
              "(more: 503 with Retry-After; 0: no limit)")
    flag("--admit-burst", type=_count, default=admit.session_burst,
         help="of those, how many may come at once")
    flag("--admit-password-rate", type=_rate, default=None,
         help="argon2 password checks (Basic logins not remembered) let in a second (more: "
              "503 with Retry-After; 0: no limit; default: by FPLUS_ARGON2_PROFILE and the "
              "CPUs this process may use, 4 a second per CPU with the default profile); "
              "bursts of twice as many")


def _admission_settings(args: argparse.Namespace) -> AdmissionSettings:
    password = args.admit_password_rate
    if password is None:
        with _one_line():
            password = password_check_rate()
    return AdmissionSettings(session_rate=args.admit_rate, session_burst=args.admit_burst,
                             password_rate=password)


_rate = argtypes.number(0, 1e6, "a number a second")
_count = argtypes.whole()
_positive = argtypes.whole(1)  # argparse applies it to a default from the environment too


def build_parser() -> argparse.ArgumentParser:
    """The ``config-store`` command line (deploy manifests are checked against it)."""
    parser = argparse.ArgumentParser(prog="config-store", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("serve", help="serve the Config Store over HTTP")
    run.add_argument("--data-dir", type=Path, required=True, help="state directory")
    run.add_argument("--host", default="127.0.0.1")
    run.add_argument("--port", type=int, default=8701)
    run.add_argument("--database", default=os.environ.get("FPLUS_DATABASE"),
                     help="sqlite:///FILE (default: DATA_DIR/config-store.db) or "
                          "postgresql://USER:PASSWORD@HOST:PORT/DB for several replicas "
                          "(env FPLUS_DATABASE)")
    run.add_argument("--durable-commits", action="store_true",
                     help="wait for the disk at every commit (default: a commit survives a "
                          "killed process; power loss may lose the last fraction of a second)")
    run.add_argument("--database-pool", type=int, default=10,
                     help="connections to PostgreSQL per process (requests wait up to 5 s "
                          "for one, then get 503)")
    run.add_argument("--body-limit", type=int, default=1024 * 1024, help="max body bytes")
    run.add_argument("--batch-max-operations", type=_positive,
                     default=os.environ.get("FPLUS_BATCH_MAX_OPERATIONS", "100"),
                     help="operations one POST /v2/batch may carry (more: 413; env "
                          "FPLUS_BATCH_MAX_OPERATIONS)")
    run.add_argument("--connections", type=int, default=2000,
                     help="concurrent HTTP and WebSocket connections")
    add_tls_options(run)
    add_cors_options(run)
    _notify_flags(run)
    _admission_flags(run)
    return parser


def main(argv: list[str] | None = None) -> None:
    """Entry point."""
    args = build_parser().parse_args(argv)
    configure_logging()
    tls = server_tls(args, "config-store")
    origins = cors_origins(args)
    listener = bind_port(args.host, args.port, "config-store")  # before anything is written
    _prepare(args, f"{scheme(tls)}://{args.host}:{args.port}")
    offload.use_gevent_threadpool()  # argon2 hashing off the hub
    serve(functools.partial(_worker, args, origins), args.host, args.port,
          args.connections, listener=listener, tls=tls)


if __name__ == "__main__":
    main()
