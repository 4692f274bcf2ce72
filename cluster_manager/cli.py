"""``cluster-manager`` command: the Cluster Manager service, and the all-in-one stack."""

from __future__ import annotations

from gevent import monkey

monkey.patch_all()  # before requests/ssl are imported: the service runs on gevent

import argparse  # noqa: E402
import logging  # noqa: E402
import os  # noqa: E402
from pathlib import Path  # noqa: E402

from config_store.client import ConfigStoreClient, client_from_env  # noqa: E402
from serving import serve  # noqa: E402

from ._http.app import create_app  # noqa: E402
from .commission import Commissioner  # noqa: E402
from .reconciler import Reconciler  # noqa: E402
from .repos import Repos  # noqa: E402
from .settings import Settings  # noqa: E402
from .setup import own_principal, seed  # noqa: E402
from .up import up  # noqa: E402


def _serve(args: argparse.Namespace) -> None:
    settings = Settings(
        config_store_url=args.config_store, git_url=args.git, data_dir=args.data_dir,
        git_repos=args.git_repos, organisation=args.organisation,
        edge_config_store_url=args.edge_config_store, edge_sync_image=args.edge_sync_image,
        workers=args.workers, backoff_initial=args.backoff)
    admin = client_from_env(settings.config_store_url)
    service = seed(admin)
    name, password = own_principal(admin, service, settings.data_dir)
    cs = ConfigStoreClient(settings.config_store_url, name, password)
    commissioner = Commissioner(cs, settings, service, Repos(settings, name, password))
    reconciler = Reconciler(cs, commissioner, settings.workers, settings.backoff_initial,
                            settings.backoff_max)
    print(f"Cluster Manager listening on http://{args.host}:{args.port}  "
          f"(Config Store {settings.config_store_url}, Git {settings.git_url})", flush=True)
    serve(create_app(reconciler), args.host, args.port, on_start=reconciler.start)


def main(argv: list[str] | None = None) -> None:
    """Entry point."""
    parser = argparse.ArgumentParser(prog="cluster-manager", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("serve", help="run the Cluster Manager")
    run.add_argument("--config-store", default=os.environ.get("CONFIG_STORE_URL",
                                                             "http://127.0.0.1:8701"))
    run.add_argument("--git", default="http://127.0.0.1:8702",
                     help="Git server base URL, as edges reach it")
    run.add_argument("--git-repos", type=Path,
                     help="the Git server's repos directory, if on this machine")
    run.add_argument("--data-dir", type=Path, required=True)
    run.add_argument("--host", default="127.0.0.1")
    run.add_argument("--port", type=int, default=8700)
    run.add_argument("--organisation", default="ACS", help="Sparkplug group prefix")
    run.add_argument("--edge-config-store", help="Config Store URL as edges reach it")
    run.add_argument("--edge-sync-image", default=Settings.edge_sync_image)
    run.add_argument("--workers", type=int, default=8, help="clusters reconciled at once")
    run.add_argument("--backoff", type=float, default=2.0, help="first retry delay (s)")
    stack = sub.add_parser("up", help="run the all-in-one stack on 127.0.0.1")
    stack.add_argument("--data-dir", type=Path, default=Path(".data"))
    stack.add_argument("--port", type=int, default=8700,
                       help="Cluster Manager port; Config Store on P+1, Git server on P+2")
    args = parser.parse_args(argv)
    logging.basicConfig(level=os.environ.get("LOG_LEVEL", "INFO"),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if args.command == "up":
        up(args.data_dir, args.port)
    else:
        _serve(args)


if __name__ == "__main__":
    main()
