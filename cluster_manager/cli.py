"""``cluster-manager`` command: the Cluster Manager service, and the all-in-one stack."""

from __future__ import annotations

from gevent import monkey

monkey.patch_all()  # before requests/ssl are imported: the service runs on gevent

import argparse  # noqa: E402
import os  # noqa: E402
from pathlib import Path  # noqa: E402

from config_store.client import Access, ConfigStoreClient, client_from_env  # noqa: E402
from serving import configure_logging, offload, serve  # noqa: E402

from ._http.app import create_app  # noqa: E402
from ._http.context import ApiServices  # noqa: E402
from .api.bootstrap_scripts import ScriptBuilder  # noqa: E402
from .api.bootstrap_tokens import BootstrapTokens  # noqa: E402
from .api.secrets import SecretService  # noqa: E402
from .cluster_repos import ClusterRepos  # noqa: E402
from .metrics import Metrics  # noqa: E402
from .reconcile.commissioning import Env, Groups  # noqa: E402
from .reconcile.desired import DesiredState  # noqa: E402
from .reconcile.reconciler import Reconciler  # noqa: E402
from .reconcile.seeding import own_principal, seed  # noqa: E402
from .settings import Settings  # noqa: E402
from .up import up  # noqa: E402


def _settings(args: argparse.Namespace) -> Settings:
    return Settings(
        config_store_url=args.config_store, git_url=args.git, data_dir=args.data_dir,
        git_repos=args.git_repos, organisation=args.organisation,
        edge_config_store_url=args.edge_config_store, edge_sync_image=args.edge_sync_image,
        workers=args.workers, backoff_initial=args.backoff,
        external_url=args.external_url or f"http://{args.host}:{args.port}",
        bootstrap_token_ttl=args.bootstrap_token_ttl, public_bootstrap=args.public_bootstrap,
        flux_install_file=args.flux_install_file, body_limit=args.body_limit)


def _serve(args: argparse.Namespace) -> None:
    settings = _settings(args)
    offload.use_gevent_threadpool()  # repository creation off the hub
    if settings.flux_install_file is not None and not settings.flux_install_file.is_file():
        raise SystemExit(f"--flux-install-file {settings.flux_install_file}: no such file")
    admin = client_from_env(settings.config_store_url)
    service = seed(admin)
    name, password = own_principal(admin, service, settings.data_dir)
    cs = ConfigStoreClient(settings.config_store_url, name, password)
    repos = ClusterRepos(settings, name, password)
    metrics = Metrics()
    tokens = BootstrapTokens(settings.data_dir / "bootstrap-tokens.sqlite",
                             settings.bootstrap_token_ttl)
    env = Env(cs, settings, Groups.from_service_config(service), repos, DesiredState(cs),
              forget_tokens=tokens.forget)
    reconciler = Reconciler(env, settings.workers, settings.backoff_initial,
                            settings.backoff_max, metrics)
    api = ApiServices(
        cs=cs, access=Access(cs, settings.auth_cache_seconds), secrets=SecretService(cs, repos),
        tokens=tokens,
        scripts=ScriptBuilder(cs, flux_install_file=settings.flux_install_file,
                              wait_timeout=settings.bootstrap_wait_timeout,
                              with_credentials=not settings.public_bootstrap),
        metrics=metrics, external_url=settings.external_url or "",
        public_bootstrap=settings.public_bootstrap, reconciler=reconciler)
    print(f"Cluster Manager listening on http://{args.host}:{args.port}  "
          f"(Config Store {settings.config_store_url}, Git {settings.git_url})", flush=True)
    serve(create_app(api, settings.body_limit), args.host, args.port,
          on_start=reconciler.start)


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
    run.add_argument("--external-url",
                     help="this service's URL as users and edges reach it "
                          "(default http://HOST:PORT)")
    run.add_argument("--bootstrap-token-ttl", type=float, default=3600.0,
                     help="seconds a bootstrap URL stays valid")
    run.add_argument("--public-bootstrap", action="store_true",
                     help="ACS-style bootstrap URLs without a token; the script then "
                          "carries no credentials")
    run.add_argument("--flux-install-file", type=Path,
                     help="`flux install --export` output to embed in bootstrap scripts "
                          "(air-gapped edges) instead of the pinned release URL")
    run.add_argument("--body-limit", type=int, default=1024 * 1024,
                     help="largest request body in bytes (413 above)")
    stack = sub.add_parser("up", help="run the all-in-one stack on 127.0.0.1")
    stack.add_argument("--data-dir", type=Path, default=Path(".data"))
    stack.add_argument("--port", type=int, default=8700,
                       help="Cluster Manager port; Config Store on P+1, Git server on P+2")
    args = parser.parse_args(argv)
    configure_logging()
    if args.command == "up":
        up(args.data_dir, args.port)
    else:
        _serve(args)


if __name__ == "__main__":
    main()
