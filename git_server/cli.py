"""``git-server`` command: serve per-cluster Git repositories over smart HTTP."""

from __future__ import annotations

from gevent import monkey

monkey.patch_all()  # before requests/ssl are imported: the server runs on gevent

import argparse  # noqa: E402
import os  # noqa: E402
from pathlib import Path  # noqa: E402

from config_store.client import (  # noqa: E402
    Access,
    ConfigStoreClient,
    ConfigStoreError,
    client_from_env,
)
from serving import (  # noqa: E402
    bind_port,
    config_store_failure,
    configure_logging,
    require_credentials,
    serve,
)

from ._domain.registry import RepoRegistry  # noqa: E402
from ._domain.setup import ensure_setup  # noqa: E402
from ._domain.storage import RepoStorage  # noqa: E402
from ._http.app import create_app  # noqa: E402
from ._http.context import GitServer  # noqa: E402

PROG = "git-server"


def _admin_client(url: str) -> ConfigStoreClient:
    """The client for FPLUS_USER / FPLUS_PASSWORD, once the Config Store answers to them."""
    require_credentials(PROG)
    client = client_from_env(url)
    client.connect(wait=5.0)
    return client


def main(argv: list[str] | None = None) -> None:
    """Entry point."""
    parser = argparse.ArgumentParser(prog="git-server", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("serve", help="serve repositories over smart HTTP")
    run.add_argument("--data-dir", type=Path, required=True, help="repositories live here")
    run.add_argument("--config-store", default=os.environ.get("CONFIG_STORE_URL",
                                                             "http://127.0.0.1:8701"))
    run.add_argument("--host", default="127.0.0.1")
    run.add_argument("--port", type=int, default=8702)
    run.add_argument("--acl-cache-seconds", type=float, default=5.0,
                     help="how long a principal's credentials and ACL are cached")
    args = parser.parse_args(argv)
    configure_logging()
    listener = bind_port(args.host, args.port, PROG)
    url = args.config_store.rstrip("/")
    try:
        client = _admin_client(url)
        ensure_setup(client)
    except ConfigStoreError as exc:
        raise config_store_failure(PROG, url, exc.status, str(exc)) from None
    registry = RepoRegistry(client)
    server = GitServer(Access(client, args.acl_cache_seconds), registry,
                       RepoStorage(args.data_dir))
    app = create_app(server)
    print(f"Git server listening on http://{args.host}:{args.port}  (repos: "
          f"{server.storage.root}, Config Store: {args.config_store})", flush=True)
    serve(app, args.host, args.port, on_start=registry.start, listener=listener)


if __name__ == "__main__":
    main()
