"""``POST /v2/batch`` among concurrent writers: batches, some failing at their last
operation, sent alongside single writes (which PostgreSQL's group commit may share a
transaction with, a batch joining behind a savepoint): each committed batch holds all its
entries, each failed one none, and every single write is kept. On both storage backends
(``config_store``)."""

from __future__ import annotations

import threading
import uuid
from typing import Any

from fplus.config_store import uuids
from harness.servers import ADMIN_PASSWORD, Api, ConfigStoreProcess
from tests.conftest import make_object

BATCHES = 8
"""Batches per sending thread (every other one fails at its last operation)."""
SIZE = 5


def _entry(app: str, obj: str) -> str:
    return f"/v2/app/{app}/object/{obj}"


def test_batches_among_single_writes_are_all_or_nothing(
        config_store: ConfigStoreProcess) -> None:
    admin = Api(config_store.url, ("admin", ADMIN_PASSWORD))
    app = make_object(admin, uuids.Class.App)
    objs = [make_object(admin, uuids.Class.Device) for _ in range(SIZE)]
    stale = f'"{uuid.uuid4()}"'
    outcome: dict[tuple[int, int], int] = {}
    singles: dict[str, list[int]] = {}

    def batches(t: int) -> None:
        api = Api(config_store.url, ("admin", ADMIN_PASSWORD))
        for n in range(BATCHES):
            ops: list[dict[str, Any]] = [
                {"method": "PUT", "path": _entry(app, o), "body": {"t": t, "n": n}}
                for o in objs[:-1]]
            last: dict[str, Any] = {"method": "PUT", "path": _entry(app, objs[-1]),
                                    "body": {"t": t, "n": n}}
            if n % 2:
                last["headers"] = {"If-Match": stale}
            outcome[(t, n)] = api.post("/v2/batch", json={"operations": [*ops, last]}) \
                .status_code

    def single() -> None:
        api = Api(config_store.url, ("admin", ADMIN_PASSWORD))
        mine = make_object(api, uuids.Class.Device)
        singles[mine] = [api.put(_entry(app, mine), json={"n": n}).status_code
                         for n in range(BATCHES * 2)]

    threads = [threading.Thread(target=batches, args=(t,)) for t in range(2)]
    threads += [threading.Thread(target=single) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(singles) == 2
    for mine, codes in singles.items():
        assert codes == [201] + [204] * (BATCHES * 2 - 1)
        assert admin.get(_entry(app, mine)).json() == {"n": BATCHES * 2 - 1}
    assert outcome == {
        (t, n): 412 if n % 2 else 200 for t in range(2) for n in range(BATCHES)}
    values = [admin.get(_entry(app, o)).json() for o in objs]
    assert len({(v["t"], v["n"]) for v in values}) == 1, values  # one batch wrote them all
    assert values[0]["n"] % 2 == 0  # and it was one that committed
