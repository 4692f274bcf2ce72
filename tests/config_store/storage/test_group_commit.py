"""Group commit on PostgreSQL (``fplus.config_store._storage.pggroup``): a write that allows it and
sees another queued leaves its transaction open for the next; the last commits for all.
Real PostgreSQL; ``queued`` is forced instead of racing threads, so each case is exact.
Then the domain under real threads: every write lands, in order, and groups did form."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest.mock import ANY

import psycopg
import pytest

from fplus.config_store import uuids
from fplus.config_store._domain import configs
from fplus.config_store._domain.events import ConfigChanged
from fplus.config_store._domain.store import open_store
from fplus.config_store._storage import Storage, StorageUnavailable, open_storage
from fplus.config_store._storage.pggroup import MAX_DEFERRED

pytestmark = pytest.mark.replicas


@pytest.fixture
def storage(postgres: Any, tmp_path: Path) -> Iterator[Storage]:
    store = open_storage(postgres.create_database(), tmp_path)
    store.queued = lambda: True  # as if a write always waited behind
    yield store
    store.close()


def _deferred_put(storage: Storage, app: str, obj: str, ran: list[str]) -> Any:
    with storage.write() as w:
        w.put_config(app, obj, f'{{"o":"{obj}"}}', f"e-{obj}")
        w.commit_later(lambda: ran.append(obj))
    return w.outcome


def _logged_at(url: str, app: str, objs: list[str]) -> list[Any]:
    """When each logged change to an entry of ``app`` for ``objs`` was made (``now()``: its
    transaction's start)."""
    with psycopg.connect(url) as conn:
        return [row[0] for row in conn.execute(
            "SELECT at FROM change_log WHERE kind = 'config' AND a = %s AND b = ANY(%s) "
            "ORDER BY seq", (app, objs))]


def test_the_next_write_commits_the_held_back_ones_in_order(storage: Storage) -> None:
    app, objs, ran = str(uuid.uuid4()), [str(uuid.uuid4()) for _ in range(3)], []
    outcomes = [_deferred_put(storage, app, obj, ran) for obj in objs[:2]]
    assert all(o is not None and not o.wait(0) for o in outcomes)
    assert storage.reader().get_config(app, objs[0]) is None  # not committed yet
    assert ran == []
    with storage.write() as w:  # does not allow it: commits the group
        w.put_config(app, objs[2], "{}", "e-last")
    assert w.outcome is None
    assert ran == objs[:2]  # at the commit, in write order
    assert all(o.wait(0) for o in outcomes)
    assert [storage.reader().get_config(app, o) is not None for o in objs] == [True] * 3
    at = _logged_at(storage.url, app, objs)  # type: ignore[attr-defined]
    assert len(at) == 3 and len(set(at)) == 1  # one transaction


def test_a_failing_write_in_a_group_undoes_only_itself(storage: Storage) -> None:
    app, first, failing, ran = str(uuid.uuid4()), str(uuid.uuid4()), str(uuid.uuid4()), []
    outcome = _deferred_put(storage, app, first, ran)
    with pytest.raises(RuntimeError), storage.write((app, failing)) as w:
        w.put_config(app, failing, "{}", "e")
        w.sql.send([])  # its statements reached the database before it failed
        raise RuntimeError("refused")
    assert outcome.wait(0) and ran == [first]
    assert storage.reader().get_config(app, first) is not None
    assert storage.reader().get_config(app, failing) is None


def test_a_group_whose_commit_fails_commits_none_of_it(storage: Storage) -> None:
    app, first, ran = str(uuid.uuid4()), str(uuid.uuid4()), []
    with storage.write() as w:
        w.put_principal("p-1", "taken", None)
    outcome = _deferred_put(storage, app, first, ran)
    with pytest.raises(psycopg.errors.UniqueViolation), storage.write() as w:
        w.put_principal("p-2", "taken", None)  # name unique: fails at the commit
    with pytest.raises(StorageUnavailable, match="not committed"):
        outcome.wait(0)
    assert ran == []
    assert storage.reader().get_config(app, first) is None
    with storage.write() as w:  # and the storage goes on
        w.put_config(app, first, "{}", "e2")
    assert storage.reader().get_config(app, first) == ("{}", "e2")


def test_flush_commits_what_nobody_came_to_commit(storage: Storage) -> None:
    app, obj, ran = str(uuid.uuid4()), str(uuid.uuid4()), []
    outcome = _deferred_put(storage, app, obj, ran)
    storage.flush()
    assert outcome.wait(0) and ran == [obj]
    storage.flush()  # nothing held: nothing to do
    assert storage.reader().get_config(app, obj) is not None


def test_a_group_holds_back_a_bounded_number_of_writes(storage: Storage) -> None:
    app, ran = str(uuid.uuid4()), []
    outcomes = [_deferred_put(storage, app, str(uuid.uuid4()), ran)
                for _ in range(MAX_DEFERRED + 1)]
    assert outcomes[-1] is None  # the group was full: this one committed them all
    assert len(ran) == MAX_DEFERRED and all(o.wait(0) for o in outcomes[:-1])


def test_nothing_is_held_back_when_no_write_waits(storage: Storage) -> None:
    storage.queued = lambda: False
    app, obj = str(uuid.uuid4()), str(uuid.uuid4())
    assert _deferred_put(storage, app, obj, []) is None
    assert storage.reader().get_config(app, obj) is not None


def test_sqlite_never_holds_a_write_back(tmp_path: Path) -> None:
    storage = open_storage(None, tmp_path)
    storage.queued = lambda: True
    app, obj = str(uuid.uuid4()), str(uuid.uuid4())
    assert _deferred_put(storage, app, obj, []) is None
    assert storage.reader().get_config(app, obj) is not None


def test_concurrent_patches_all_land_in_order_in_shared_commits(postgres: Any,
                                                               tmp_path: Path) -> None:
    """8 threads x 40 merge-patches through the domain: every write lands, each entry's
    events arrive in write order, and some writes shared a transaction."""
    url = postgres.create_database()
    store = open_store(tmp_path, "admin-pw-1234", url)
    try:
        core = store.core
        app = next(a for a in sorted(core.graph.members(uuids.Class.App))
                   if a not in (uuids.App.Registration, uuids.App.ConfigSchema))
        objs = sorted(core.graph.objects)[:8]
        seen: dict[str, list[int]] = {obj: [] for obj in objs}

        def listen(events: Any, number: int) -> None:
            for event in events:
                if isinstance(event, ConfigChanged) and event.app == app and event.value:
                    seen[event.obj].append(event.value["n"])

        core.events.subscribe(listen)

        def writer(obj: str) -> None:
            for n in range(40):
                configs.patch(core, store.schemas, store.root, app, obj, {"n": n})

        threads = [threading.Thread(target=writer, args=(obj,)) for obj in objs]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert seen == {obj: list(range(40)) for obj in objs}
        assert all(core.storage.reader().get_config(app, obj)[0] == '{"n":39}' for obj in objs)
        at = _logged_at(url, app, objs)
        assert len(at) == 8 * 40
        assert len(set(at)) < len(at), "no two writes shared a transaction"
    finally:
        store.core.storage.close()


def test_a_write_nobody_follows_commits_itself_and_schema_writes_never_wait(
        postgres: Any, tmp_path: Path) -> None:
    """The domain told (falsely) that writes are queued: an entry write is held back, and as
    no write comes to commit it, its caller commits it itself (``Core._wait_for``). A schema
    write is never held back: later writes validate against it from memory."""
    store = open_store(tmp_path, "admin-pw-1234", postgres.create_database())
    try:
        core, storage = store.core, store.core.storage
        flushes: list[int] = []
        flush = storage.flush
        storage.flush = lambda: flushes.append(1) or flush()  # type: ignore[method-assign]
        storage.queued = lambda: True
        app = next(a for a in sorted(core.graph.members(uuids.Class.App))
                   if a not in (uuids.App.Registration, uuids.App.ConfigSchema))
        obj = sorted(core.graph.objects)[0]
        configs.put(core, store.schemas, store.root, app, obj, {"n": 1})
        assert flushes == [1]
        assert storage.reader().get_config(app, obj) == ('{"n":1}', ANY)
        configs.put(core, store.schemas, store.root, uuids.App.ConfigSchema, app,
                    {"type": "object", "required": ["n"]})
        assert flushes == [1]
        assert storage.reader().get_config(uuids.App.ConfigSchema, app) is not None
    finally:
        store.core.storage.close()
