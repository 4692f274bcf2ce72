"""List + watch Nodes and report the resulting ``hosts`` whenever they change."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from urllib3.exceptions import ProtocolError, ReadTimeoutError

from fplus.jsontypes import as_object

from .hosts import hosts
from .kube import KUBE_ERRORS, Kube, KubeObject, describe
from .report import Host
from .retry import Backoff

log = logging.getLogger(__name__)

HostsCallback = Callable[[list[Host]], None]


class NodeWatcher:
    """Keeps the set of Nodes current and calls ``on_hosts`` with each new host list.

    Each cycle lists all Nodes, then watches from the list's resourceVersion until the
    stream ends (server timeout, client read timeout, error); then it lists again. Failed
    calls are retried with back-off; equal host lists are reported once.
    """

    def __init__(self, kube: Kube, on_hosts: HostsCallback, *, watch_timeout: float = 300.0,
                 backoff: Backoff | None = None) -> None:
        self.kube = kube
        self.on_hosts = on_hosts
        self.watch_timeout = watch_timeout
        self.backoff = backoff or Backoff()
        self._last: list[Host] | None = None

    def run(self, stop: threading.Event) -> None:
        """Loop until ``stop`` is set."""
        failures = 0
        while not stop.is_set():
            try:
                self._cycle(stop)
                failures = 0
            except KUBE_ERRORS as exc:
                failures += 1
                delay = self.backoff.delay(failures)
                log.warning("nodes: %s; retrying in %.1f s", describe(exc), delay)
                stop.wait(delay)

    def _cycle(self, stop: threading.Event) -> None:
        items, version = self.kube.list_nodes()
        nodes = {_name(node): node for node in items}
        self._publish(nodes)
        try:
            for event in self.kube.watch_nodes(version, self.watch_timeout):
                if stop.is_set():
                    return
                kind, node = event["type"], event["object"]
                if kind in ("ADDED", "MODIFIED"):
                    nodes[_name(node)] = node
                elif kind == "DELETED":
                    nodes.pop(_name(node), None)
                else:
                    continue  # BOOKMARK
                self._publish(nodes)
        except (ReadTimeoutError, ProtocolError):
            pass  # the stream went quiet or was cut after a good list: list and watch again

    def _publish(self, nodes: dict[str, KubeObject]) -> None:
        current = hosts(nodes.values())
        if current != self._last:
            self._last = current
            log.info("nodes: %d host(s), %d ready", len(current),
                     sum(1 for h in current if h["ready"]))
            self.on_hosts(current)


def _name(node: KubeObject) -> str:
    return str(as_object(node.get("metadata")).get("name") or "")
