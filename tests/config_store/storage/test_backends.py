"""The two storage backends give the same answers: search conditions evaluated by the
database (a table of documents and conditions), etags, tokens, and the change log that
only PostgreSQL keeps. Real SQLite and a real PostgreSQL, no server process."""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from fplus.config_store._domain.common.jsonvalue import canonical, parse
from fplus.config_store._domain.configdb.search import Query
from fplus.config_store._storage import ReadFirst, Storage, TokenRow, open_storage

pytestmark = pytest.mark.replicas

DOCS: dict[str, Any] = {
    "int": {"n": 1, "name": "a", "flag": True},
    "real": {"n": 1.0, "name": "b", "flag": False},
    "text-number": {"n": "1", "name": "c"},
    "nested": {"a": {"b": {"c": "deep"}}, "flag": None},
    "nul": {"name": "has\u0000nul", "n": 2},
    "list": {"n": [1], "a": {"b": [1, 2]}},
}

CASES = [
    ("n=1", ["int", "real"]),
    ("n=1.0", ["int", "real"]),
    ('n="1"', ["text-number"]),
    ("n=2", ["nul"]),
    ("flag=true", ["int"]),
    ("flag=false", ["real"]),
    ("flag=null", ["nested"]),
    ("flag=undefined", ["list", "nul", "text-number"]),
    ('a.b.c="deep"', ["nested"]),
    ('name="has\\u0000nul"', ["nul"]),
    ('name="a"&n=1', ["int"]),
    ('name="a"&n=2', []),
]


@pytest.fixture(params=["sqlite", "postgresql"])
def storage(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Storage]:
    url = (None if request.param == "sqlite"
           else request.getfixturevalue("postgres").create_database())
    store = open_storage(url, tmp_path)
    yield store
    store.close()


@pytest.fixture(params=["sqlite", "postgresql"])
def storage_of(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    """Open a storage of each kind with the options given."""
    opened: list[Storage] = []

    def open_(**options: Any) -> Storage:
        url = (None if request.param == "sqlite"
               else request.getfixturevalue("postgres").create_database())
        opened.append(open_storage(url, tmp_path, **options))
        return opened[-1]

    yield open_
    for store in opened:
        store.close()


def _fill(storage: Storage, app: str) -> dict[str, str]:
    ids = {name: str(uuid.uuid4()) for name in DOCS}
    with storage.write() as w:
        for name, doc in DOCS.items():
            w.put_config(app, ids[name], canonical(doc), uuid.uuid4().hex)
    return ids


@pytest.mark.parametrize(("query", "expected"), CASES)
def test_search_is_evaluated_the_same(storage: Storage, query: str,
                                      expected: list[str]) -> None:
    app = str(uuid.uuid4())
    ids = _fill(storage, app)
    names = {v: k for k, v in ids.items()}
    items = [tuple(part.split("=", 1)) for part in query.split("&")]
    q = Query(items)
    rows = storage.reader().search_entries(app, q.sql_conditions())
    matched = sorted(names[o] for o, text in rows if q.matches(parse(text)))
    assert matched == sorted(expected)
    if "\\u0000" not in query:  # the database narrowed the rows (a NUL: the server checks)
        extra = {names[o] for o, _ in rows} - set(expected)
        assert extra <= {"nul"}  # only what JSONB cannot hold comes back unevaluated


def test_an_entry_reads_back_with_its_etag(storage: Storage) -> None:
    app, obj = str(uuid.uuid4()), str(uuid.uuid4())
    with storage.write() as w:
        w.put_config(app, obj, canonical({"k": "é"}), "e1")
    assert storage.reader().get_config(app, obj) == ('{"k":"é"}', "e1")
    with storage.write() as w:
        assert w.delete_config(app, obj)
        assert not w.delete_config(app, obj)
    assert storage.reader().get_config(app, obj) is None


@pytest.mark.parametrize("text", ["it's", "%s and %%s", "back\\slash", "$1 $$ ;",
                                  "E'\\x00'", "line\nbreak", "日本 🚀"])
def test_any_text_reads_back_as_written(storage: Storage, text: str) -> None:
    """Values are written into each statement as literals: none is taken for SQL, a
    placeholder or an escape."""
    app, obj = str(uuid.uuid4()), str(uuid.uuid4())
    with storage.write() as w:
        w.put_config(app, obj, canonical({"k": text}), text)
    assert storage.reader().get_config(app, obj) == (canonical({"k": text}), text)
    assert (obj, canonical({"k": text}), text) in storage.reader().config_entries(app)


def test_tokens_are_stored_and_pruned(storage: Storage) -> None:
    live = TokenRow("d-live", "p", "t", 2e9)
    old = TokenRow("d-old", "p", "t", 1.0)
    with storage.write() as w:
        w.put_token(live)
        w.put_token(old)
    assert storage.reader().token("d-live") == live
    with storage.write() as w:
        assert w.delete_tokens_refused_before(100.0) == 1
    assert storage.reader().token("d-old") is None
    assert storage.reader().token("d-live") == live


def test_a_failed_write_leaves_nothing(storage: Storage) -> None:
    app, obj = str(uuid.uuid4()), str(uuid.uuid4())
    with pytest.raises(RuntimeError), storage.write() as w:
        w.put_config(app, obj, "{}", "e")
        raise RuntimeError("the domain refused")
    assert storage.reader().get_config(app, obj) is None


def test_a_write_reads_what_it_wrote_before_it_commits(storage: Storage) -> None:
    """Mutations a backend may hold until the next read (PostgreSQL sends them with it)
    are in place when the write reads again, in the order they were made."""
    app, obj, klass = str(uuid.uuid4()), str(uuid.uuid4()), str(uuid.uuid4())
    with storage.write() as w:
        w.put_config(app, obj, '{"v":1}', "e1")
        w.put_config(app, obj, '{"v":2}', "e2")
        w.set_membership(klass, obj, True)
        assert w.get_config(app, obj) == ('{"v":2}', "e2")
        assert w.is_member(klass, obj)
        w.set_membership(klass, obj, False)
        assert w.delete_config(app, obj)  # a mutation whose outcome is read
        assert not w.is_member(klass, obj)
    assert storage.reader().get_config(app, obj) is None


def test_the_entry_named_when_a_write_begins_is_read_once(storage: Storage) -> None:
    """``write(entry)`` may read the entry as it takes the lock; after the write changes
    it, reads see the change, not the row read at the start."""
    app, obj = str(uuid.uuid4()), str(uuid.uuid4())
    with storage.write() as w:
        w.put_config(app, obj, '{"v":1}', "e1")
    with storage.write((app, obj)) as w:
        assert w.get_config(app, obj) == ('{"v":1}', "e1")
        w.put_config(app, obj, '{"v":2}', "e2")
        assert w.get_config(app, obj) == ('{"v":2}', "e2")
    with storage.write((app, str(uuid.uuid4()))) as w:  # named, absent
        assert w.get_config(app, obj) == ('{"v":2}', "e2")
    with storage.write((app, obj)) as w:
        assert w.delete_config(app, obj)
        assert w.get_config(app, obj) is None


def test_what_a_write_names_first_is_read_once_and_never_stale(storage: Storage) -> None:
    """``write(first=ReadFirst(…))`` (a batch names what its operations will read) may read
    it all as it takes the lock: each present entry as stored, an absent one as None,
    principals by name and by uuid; once the write changes what was read (an entry, the
    object of one, a principal), reads see the change."""
    app, a, b, c, absent = str(uuid.uuid4()), *(str(uuid.uuid4()) for _ in range(4))
    with storage.write() as w:
        for obj in (a, b, c):
            w.put_config(app, obj, f'{{"{obj}":1}}', f"e-{obj}")
        w.put_principal("p-1", "Alice", None)
    first = ReadFirst(((app, b), (app, absent), (app, a), (app, c)), ("alice", "bob"),
                      ("p-1", "p-2"))
    with storage.write((app, a), first=first) as w:
        assert w.get_config(app, absent) is None
        w.put_config(app, b, '{"v":2}', "e2")
        assert w.get_config(app, b) == ('{"v":2}', "e2")
        assert w.get_config(app, a) == (f'{{"{a}":1}}', f"e-{a}")
        assert w.get_config(app, a) == (f'{{"{a}":1}}', f"e-{a}")  # read again
        w.delete_object(c)
        assert w.get_config(app, c) is None
        assert w.principals_named_alike("alice") == [("p-1", "Alice")]
        assert w.principal_name("p-2") is None
        w.put_principal("p-2", "Bob", None)
        assert w.principals_named_alike("bob") == [("p-2", "Bob")]
        assert w.principal_name("p-1") == "Alice"
        assert w.principal_name("p-2") == "Bob"
    with storage.write(first=ReadFirst(((app, a), (app, b)), ("bob",), ("p-2",))) as w:
        assert w.delete_config(app, a)
        assert w.get_config(app, a) is None
        assert w.get_config(app, b) == ('{"v":2}', "e2")
        assert w.delete_principal("p-2")
        assert w.principals_named_alike("bob") == []
        assert w.principal_name("p-2") is None


def test_a_snapshot_ends_its_transaction_whether_it_read_or_not(storage_of: Any) -> None:
    """A snapshot's ``BEGIN`` travels with its first read (or with what it names first);
    one that read nothing, one that read, and one whose block raised all leave the one
    pooled connection fit for writes."""
    storage = storage_of(pool_size=1)
    app, obj = str(uuid.uuid4()), str(uuid.uuid4())
    with storage.snapshot():
        pass
    with storage.write() as w:
        w.put_config(app, obj, "{}", "e1")
    with storage.snapshot() as r:
        assert r.get_config(app, obj) == ("{}", "e1")
        assert r.get_config(app, str(uuid.uuid4())) is None
    with storage.snapshot(ReadFirst(((app, obj), (app, "absent")), ("nobody",))) as r:
        assert r.get_config(app, "absent") is None
        assert r.get_config(app, obj) == ("{}", "e1")
        assert r.get_config(app, obj) == ("{}", "e1")  # read again
        assert r.principals_named_alike("nobody") == []
    with pytest.raises(RuntimeError), storage.snapshot(ReadFirst(((app, obj),))) as r:
        r.get_config(app, obj)
        raise RuntimeError("refused")
    with storage.write((app, obj)) as w:
        w.put_config(app, obj, "{}", "e2")
    assert storage.reader().get_config(app, obj) == ("{}", "e2")


def test_writes_go_on_after_one_rolled_back(storage_of: Any) -> None:
    """A rolled-back write leaves its connection fit for the next: on PostgreSQL the
    statements prepared by earlier writes are still there (the driver's own preparing,
    which deallocates everything after a ROLLBACK, is off). One connection, so reads and
    writes share it."""
    storage = storage_of(pool_size=1)
    app, obj = str(uuid.uuid4()), str(uuid.uuid4())
    for n in range(3):
        with storage.write((app, obj)) as w:
            w.put_config(app, obj, f'{{"n":{n}}}', f"e{n}")
        for _ in range(10):  # reads often enough for a driver to prepare them
            storage.reader().get_config(app, obj)
        with pytest.raises(RuntimeError), storage.write((app, obj)) as w:
            w.put_config(app, obj, "{}", "x")
            raise RuntimeError("refused")
    assert storage.reader().get_config(app, obj) == ('{"n":2}', "e2")


def test_a_held_mutation_failing_at_commit_rolls_the_write_back(storage: Storage) -> None:
    """A constraint broken by a mutation held until the commit fails the write there, and
    nothing of it stays; the storage keeps working."""
    app, obj = str(uuid.uuid4()), str(uuid.uuid4())
    with storage.write() as w:
        w.put_principal("p-1", "taken", None)
    with pytest.raises((sqlite3.IntegrityError, psycopg.errors.UniqueViolation)), \
            storage.write() as w:
        w.put_config(app, obj, "{}", "e1")
        w.put_principal("p-2", "taken", None)  # name unique
    assert storage.reader().get_config(app, obj) is None
    assert storage.reader().principal_by_name("taken") == ("p-1", None)
    with storage.write() as w:
        w.put_config(app, obj, "{}", "e2")
    assert storage.reader().get_config(app, obj) == ("{}", "e2")


def test_a_failing_write_leaves_the_connection_and_its_reads_fit(storage_of: Any) -> None:
    """A write failing at its commit, first while its statements are being prepared on the
    connection, then again with all of them prepared: nothing of it stays, and the reads
    sharing the one connection (pool of one) answer from the database each time."""
    storage = storage_of(pool_size=1)
    app, obj = str(uuid.uuid4()), str(uuid.uuid4())
    with storage.write() as w:
        w.put_principal("p-1", "taken", None)
    for n in range(3):
        with pytest.raises((sqlite3.IntegrityError, psycopg.errors.UniqueViolation)), \
                storage.write((app, obj)) as w:
            w.put_config(app, obj, f'{{"n":{n}}}', f"e{n}")
            w.put_principal("p-2", "taken", None)  # name unique
        assert storage.reader().get_config(app, obj) is None
        assert storage.reader().principal_by_name("taken") == ("p-1", None)
    with storage.write((app, obj)) as w:
        w.put_config(app, obj, "{}", "e")
    assert storage.reader().get_config(app, obj) == ("{}", "e")


def test_postgres_logs_what_each_write_changed(postgres: Any, tmp_path: Path) -> None:
    from fplus.config_store._storage.postgres.change_feed import ChangeFeed

    storage = open_storage(postgres.create_database(), tmp_path)
    try:
        feed = ChangeFeed(storage)  # type: ignore[arg-type]
        start = feed.read(0).cursor or 0
        app, obj = str(uuid.uuid4()), str(uuid.uuid4())
        with storage.write() as w:
            w.put_config(app, obj, "{}", "e1")
            w.set_membership("k", obj, True)
        with storage.write() as w:
            w.delete_config(app, obj)
        batch = feed.read(start)
        assert [(c.kind, c.a, c.b, c.etag) for _, _, c in batch.changes] == [
            ("config", app, obj, "e1"), ("member", "k", obj, None), ("config", app, obj, None)]
        assert {origin for _, origin, _ in batch.changes} == {
            storage.origin}  # type: ignore[attr-defined]
        assert not batch.gap
        with pytest.raises(RuntimeError), storage.write() as w:  # rolled back: not logged
            w.put_config(app, obj, "{}", "e2")
            raise RuntimeError("no")
        assert feed.read(batch.cursor or 0).changes == []
        # pruning everything: a reader behind the pruned point is told it missed changes
        assert feed.prune(keep_s=0) >= 3
        assert feed.read(start).gap
        assert not feed.read(batch.cursor or 0).gap
    finally:
        storage.close()
