"""A storm on a small scale: hundreds of notify/v2 clients against a Config Store restarted
under them. Admission control (``--admit-rate``) answers the excess 503 with a jittered
``Retry-After`` before the upgrade, the clients back off with full jitter and honour it,
``/ping`` stays quick, and every client is back with its subscription answered: none gave
up, and the server's memory stays bounded."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
import requests

from fplus.config_store import uuids
from fplus.config_store.client import ConfigStoreClient, NotifyClient
from harness.servers import ADMIN_PASSWORD, ConfigStoreProcess

pytestmark = pytest.mark.timeout(120)

CLIENTS = 300
RATE, BURST = 60, 30


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def _wait_for(check, timeout: float, what: str) -> float:  # type: ignore[no-untyped-def]
    start = time.monotonic()
    while not check():
        assert time.monotonic() - start < timeout, f"not within {timeout:g} s: {what}"
        time.sleep(0.1)
    return time.monotonic() - start


def test_hundreds_of_clients_ride_out_a_restart(tmp_path: Path) -> None:
    server = ConfigStoreProcess(
        tmp_path / "data",
        extra_args=("--admit-rate", str(RATE), "--admit-burst", str(BURST),
                    "--notify-max-connections", str(CLIENTS + 10)),
        settings={"FPLUS_HTTP_CONNECTIONS_PER_IP": "0"}).start()
    clients: list[NotifyClient] = []
    rss: list[float] = []
    sampling = threading.Event()
    try:
        admin = ConfigStoreClient(server.url, "admin", ADMIN_PASSWORD)
        app = admin.create_object(uuids.Class.App)
        obj = admin.create_object(uuids.Class.Device)
        admin.put_config(app, obj, {"n": 1})
        token = admin.token()  # one token for all: no login in the storm, only handshakes

        seen: list[list[object]] = [[] for _ in range(CLIENTS)]
        for i in range(CLIENTS):
            notify = NotifyClient(ConfigStoreClient(server.url, token=token, retries=0),
                                  reconnect_delay=(0.5, 4.0), connect_timeout=10.0)
            notify.watch(app, obj, seen[i].append)
            clients.append(notify)
        took = _wait_for(lambda: all(c.connected for c in clients), 60, "all connected")
        first_refusals = sum(c.busy_refusals for c in clients)
        print(f"{CLIENTS} connected in {took:.1f} s, {first_refusals} busy refusals")
        # a watch's first update follows its connection: wait for it, not assume it came
        _wait_for(lambda: all(s and s[-1] == {"n": 1} for s in seen), 30, "every first update")

        # The restart: every client loses its connection at once and comes back.
        server.stop()
        server.start()
        pid = server.worker_pid()
        assert pid is not None

        def sample() -> None:
            while not sampling.wait(0.2):
                try:
                    rss.append(_rss_mb(pid))
                except OSError:
                    return
        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()

        pings = []
        start = time.monotonic()
        while not all(c.connections >= 2 and c.connected for c in clients):
            assert time.monotonic() - start < 60, (
                f"{sum(c.connections >= 2 for c in clients)} of {CLIENTS} back after 60 s")
            t0 = time.monotonic()
            assert requests.get(server.url + "/ping", timeout=5).ok
            pings.append(time.monotonic() - t0)
            time.sleep(0.2)
        back = time.monotonic() - start
        refused = sum(c.busy_refusals for c in clients) - first_refusals
        print(f"all {CLIENTS} back {back:.1f} s after the restart; {refused} busy refusals; "
              f"/ping worst {max(pings or [0]) * 1000:.0f} ms; RSS peak "
              f"{max(rss or [0]):.0f} MiB")
        assert refused > 0, "admission never acted: the storm was not one"
        assert max(pings or [0]) < 2.0, "the restarted replica answered /ping slowly"
        for c in clients:
            assert c._thread is not None and c._thread.is_alive(), "a client gave up"
        # every subscription is answered again on its new connection
        admin.put_config(app, obj, {"n": 2})
        _wait_for(lambda: all(s[-1] == {"n": 2} for s in seen), 30, "every watch updated")
        assert rss and max(rss) < 400, f"server RSS {max(rss):.0f} MiB"
    finally:
        sampling.set()
        for c in clients:
            c.close()
        server.stop()
