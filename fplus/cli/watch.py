"""``fplus cluster list --watch``: the list again whenever a cluster changes.

Changes arrive from the Config Store's notify/v2 WebSocket (the clusters' configuration,
setup status and edge status apps); each burst of changes costs one list call to the
Cluster Manager, which derives the phases. The list is also fetched every ``--interval``
seconds, since phases age (Online → Stale) without any write, and so that a user who may
not subscribe to those apps still sees changes.

Ctrl-C ends the watch at once, whatever it is doing (reading an answer, waiting for the
WebSocket's handshake, reconnecting, tidying up): SIGINT is kept off the notify thread, so
it always lands on the main thread, whose handler restores the terminal and leaves with
status 0 without waiting for any socket to close (the process's end closes them).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

import click
import yaml
from rich.live import Live

from fplus.config_store import uuids
from fplus.config_store.client import ConfigStoreClient, NotifyClient

from .api import ManagerApi, Row
from .output import Column, by_name, console, emit, table
from .session import trust

WATCHED_APPS = (uuids.App.EdgeClusterConfiguration, uuids.App.EdgeClusterSetupStatus,
                uuids.App.EdgeClusterStatus)
Columns = tuple[list[Column], tuple[str, ...]]
"""A table's columns and those of them only ``-o wide`` shows."""
SETTLE = 0.3
"""Seconds to let a burst of notifications settle before fetching the list once."""


@contextmanager
def _notifications(api: ManagerApi, changed: threading.Event,
                   connect_timeout: float = 5.0) -> Iterator[None]:
    """Set ``changed`` whenever a watched app changes; says once on stderr when it cannot."""
    profile = api.profile
    trust(profile.ca_file)
    if profile.user and profile.password:
        store = ConfigStoreClient(profile.config_store_url, profile.user, profile.password,
                                  retries=1)
    else:
        store = ConfigStoreClient(profile.config_store_url, token=profile.token, retries=1)
    notify = NotifyClient(store, reconnect_delay=(2.0, 3.0))
    try:
        with _sigint_for_main_thread_only():  # the notify thread starts with SIGINT blocked
            for app in WATCHED_APPS:
                notify.search(app, lambda _state: changed.set())
        if not notify.wait_ready(connect_timeout):
            click.echo(f"live updates unavailable ({notify.problem}): refreshing on the "
                       "interval only", err=True)
        yield
    finally:
        notify.close()
        store.close()


@contextmanager
def _sigint_for_main_thread_only() -> Iterator[None]:
    """Threads started inside block SIGINT (they inherit the mask), so the kernel delivers
    it to the main thread, interrupting whatever call it is blocked in."""
    if not hasattr(signal, "pthread_sigmask"):  # not POSIX: nothing to steer
        yield
        return
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


@contextmanager
def _ctrl_c_leaves(screen: _Screen) -> Iterator[None]:
    """While inside, SIGINT restores the terminal and ends the process with status 0 at
    once: no close handshake, join or retry delay can hold it (a second one meanwhile is
    ignored)."""
    def leave(_signum: int, _frame: FrameType | None) -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        for tidy in (screen.close, sys.stdout.flush, sys.stderr.flush):
            with contextlib.suppress(Exception):  # e.g. a flush interrupted mid-write
                tidy()
        os._exit(0)

    previous = signal.signal(signal.SIGINT, leave)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


class _Screen:
    """Shows successive snapshots: a table redrawn in place on a terminal; appended
    otherwise (JSON: one line each; YAML: one document each; tables: a blank line apart)."""

    def __init__(self, fmt: str, columns: Columns) -> None:
        self.fmt, (self.columns, self.wide) = fmt, columns
        self.live = None
        if fmt in ("table", "wide") and sys.stdout.isatty():
            self.live = Live(console=console(fmt), auto_refresh=False)
            self.live.start()

    def show(self, rows: list[Row]) -> None:
        if self.live is not None:
            self.live.update(table(rows, self.columns, wide=self.wide, fmt=self.fmt),
                             refresh=True)
        elif self.fmt == "json":
            click.echo(json.dumps(rows, sort_keys=True))
        elif self.fmt == "yaml":
            click.echo("---\n" + yaml.safe_dump(rows, sort_keys=True).rstrip())
        else:
            emit(rows, self.fmt, self.columns, wide=self.wide)
            click.echo()
        sys.stdout.flush()

    def close(self) -> None:
        if self.live is not None:
            self.live.stop()


def watch(api: ManagerApi, phase: str | None, fmt: str, columns: Columns,
          interval: float, selector: str | None = None, *, sync: str | None = None,
          search: str | None = None) -> None:
    """Show the cluster list (filtered as :meth:`ManagerApi.clusters` filters it), then
    again after every change, until interrupted."""
    changed = threading.Event()
    screen = _Screen(fmt, columns)
    last: list[Row] | None = None
    with _ctrl_c_leaves(screen):
        try:
            with _notifications(api, changed):
                while True:
                    rows = by_name(api.clusters(phase, selector, sync=sync, search=search))
                    if rows != last:
                        screen.show(rows)
                        last = rows
                    changed.wait(interval)
                    if changed.is_set():
                        time.sleep(SETTLE)
                        changed.clear()
        finally:
            screen.close()
