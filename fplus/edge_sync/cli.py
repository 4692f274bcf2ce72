"""``edge-sync`` command: ``edge-sync run`` starts the agent (configured by environment)."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading

from fplus.serving import configure_logging

from . import __version__
from .agent import Agent
from .kube import Kube, api_client, kubeconfig_namespace
from .settings import SettingsError, config_store_client, from_env

log = logging.getLogger("edge_sync")


def main(argv: list[str] | None = None) -> None:
    """Entry point."""
    parser = argparse.ArgumentParser(
        prog="edge-sync", description=__doc__,
        epilog="Settings come from the environment: CLUSTER_UUID, CLUSTER_NAME, "
               "CONFIG_STORE_URL, FPLUS_USER/FPLUS_PASSWORD (or *_FILE), POD_NAMESPACE, "
               "SEALED_SECRETS_NAMESPACE, SEALED_SECRETS_CONTROLLER, REALM, DIRECTORY_URL, "
               "GIT_URL, CLUSTER_MANAGER_URL (the tunnel); see docs/edge-sync.md.")
    parser.add_argument("--version", action="version", version=f"edge-sync {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="report this cluster and apply its deployments")
    run.add_argument("--kubeconfig", help="kubeconfig file (default: in-cluster, "
                                          "else $KUBECONFIG or ~/.kube/config)")
    args = parser.parse_args(argv)
    configure_logging()
    try:
        settings = from_env(os.environ)
    except SettingsError as exc:
        sys.exit(f"edge-sync: {exc}")
    try:
        kube = Kube(api_client(args.kubeconfig))
    except Exception as exc:  # the kubernetes loader raises several unrelated types
        sys.exit(f"edge-sync: no Kubernetes configuration: {exc}")
    namespace = settings.namespace or kubeconfig_namespace(args.kubeconfig)
    if not namespace:
        sys.exit("edge-sync: cannot tell my namespace: set POD_NAMESPACE")
    cs = config_store_client(settings)
    agent = Agent(settings, cs, kube, namespace)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    agent.start()
    while not stop.wait(1.0):
        pass
    log.info("stopping")
    agent.stop()
    cs.close()


if __name__ == "__main__":
    main()
