"""Durability across kill -9, and concurrent conditional PATCHes losing nothing."""

from __future__ import annotations

import json
import signal
import threading

import pytest

from fplus.config_store import uuids
from harness.servers import ADMIN_PASSWORD, Api, ConfigStoreProcess
from tests.conftest import make_object

MERGE = {"Content-Type": "application/merge-patch+json"}


def test_data_survives_kill_9(fresh_store: ConfigStoreProcess) -> None:
    api = Api(fresh_store.url, ("admin", ADMIN_PASSWORD))
    app = make_object(api, uuids.Class.App)
    objs = [make_object(api, uuids.Class.Device) for _ in range(20)]
    for i, obj in enumerate(objs):
        assert api.put(f"/v2/app/{app}/object/{obj}", json={"i": i}).status_code == 201
    etag = api.get(f"/v2/app/{app}/object/{objs[0]}").headers["ETag"]
    fresh_store.stop(signal.SIGKILL)

    again = ConfigStoreProcess(fresh_store.data_dir, port=fresh_store.port,
                               extra_args=fresh_store.extra_args).start()
    try:
        api = Api(again.url, ("admin", ADMIN_PASSWORD))
        assert api.get(f"/v2/app/{app}/object").json() == sorted(objs)
        for i, obj in enumerate(objs):
            assert api.get(f"/v2/app/{app}/object/{obj}").json() == {"i": i}
        assert api.get(f"/v2/app/{app}/object/{objs[0]}").headers["ETag"] == etag
        assert app in api.get(f"/v2/class/{uuids.Class.App}/member").json()
    finally:
        again.stop()


@pytest.mark.slow
def test_concurrent_conditional_patches_lose_nothing(admin: Api, new_app: str,
                                                     new_obj: str) -> None:
    """32 threads x 50 read-modify-write cycles with If-Match; every increment lands."""
    threads_n, per_thread = 32, 50
    url = f"/v2/app/{new_app}/object/{new_obj}"
    admin.put(url, json={"count": 0, "by": {}})
    conflicts = []

    def worker(n: int) -> None:
        api = Api(admin.base, admin.auth)
        done = 0
        while done < per_thread:
            r = api.get(url)
            body, etag = r.json(), r.headers["ETag"]
            patch = {"count": body["count"] + 1,
                     "by": {str(n): body["by"].get(str(n), 0) + 1}}
            w = api.patch(url, data=json.dumps(patch), headers=MERGE | {"If-Match": etag})
            if w.status_code == 204:
                done += 1
            else:
                assert w.status_code == 412, w.text
                conflicts.append(n)

    workers = [threading.Thread(target=worker, args=(n,)) for n in range(threads_n)]
    for t in workers:
        t.start()
    for t in workers:
        t.join()
    final = admin.get(url).json()
    assert final["count"] == threads_n * per_thread
    assert final["by"] == {str(n): per_thread for n in range(threads_n)}
    assert conflicts, "the test should have provoked precondition failures"
