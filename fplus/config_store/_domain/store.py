"""Opening a Config Store: storage, seeding and the root principal."""

from __future__ import annotations

import logging
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from .. import uuids
from .._storage import UnusableDatabase, is_replicated, open_storage
from .configdb.app_entries import AppEntries
from .configdb.schemas import SchemaCache
from .configdb.seed import seed
from .core.credentials import hash_password, verify_password
from .core.graph import Obj
from .core.replication import Replication
from .core.state import Core
from .core.tx import new_uuid

log = logging.getLogger(__name__)

__all__ = ["PASSWORD_FILE", "ROOT_NAME", "Store", "UnusableDatabase", "check_database",
           "load_store", "open_store"]

ROOT_NAME = "admin"
PASSWORD_FILE = "admin-password"  # noqa: S105 - a file name


@dataclass
class Store:
    """An open Config Store: shared state plus the schema and app-entry caches."""

    core: Core
    schemas: SchemaCache
    app_entries: AppEntries
    """Apps' entries between changes, for notify searches."""
    data_dir: Path
    replication: Replication | None = None
    """Following other replicas' writes (a shared database only); started by the server."""

    @property
    def root(self) -> str:
        """The root principal's uuid."""
        assert self.core.acl.root is not None
        return self.core.acl.root


def open_store(data_dir: Path, admin_password: str | None = None,
               database: str | None = None, pool_size: int = 10,
               durable: bool = False) -> Store:
    """Open (creating if needed) the store and ensure its root principal.

    ``database`` is a ``--database`` URL (``sqlite:///FILE`` or ``postgresql://…``); by
    default the SQLite file ``config-store.db`` in ``data_dir``. ``pool_size``: connections
    to PostgreSQL per process; ``durable``: wait for the disk at every commit.

    The root password is ``admin_password`` when given; otherwise one is generated on
    first start into ``<data_dir>/admin-password`` (mode 0600) and reused afterwards.
    Raises :class:`UnusableDatabase` (a one-line message naming the file or URL) for an
    empty or corrupt database file or a database that cannot be reached or used, and
    ValueError for an unsupported URL.
    """
    data_dir.mkdir(parents=True, exist_ok=True)
    store = load_store(data_dir, None, database, pool_size, durable)
    with store.core.transaction() as tx:  # a replica catches up with the others first
        seed(tx)
    store.core.acl.root = _ensure_root(store.core, data_dir, admin_password)
    return store


def check_database(data_dir: Path, database: str | None = None, durable: bool = False) -> str:
    """Open the database a store would use (creating or migrating its schema) and close it
    again, loading nothing; returns its description (no password). What a server checks
    before it listens, leaving the one full load to the process that serves
    (:func:`open_store`). Raises as :func:`open_store` does."""
    data_dir.mkdir(parents=True, exist_ok=True)
    storage = open_storage(database, data_dir, 2, durable)
    try:
        return storage.description
    finally:
        storage.close()


def load_store(data_dir: Path, root: str | None, database: str | None = None,
               pool_size: int = 10, durable: bool = False) -> Store:
    """The store as the database holds it, writing nothing: what a serving process (each
    gunicorn worker, as it is forked) loads once :func:`open_store` has seeded it and found
    its ``root`` principal. Raises as :func:`open_store` does."""
    storage = open_storage(database, data_dir, pool_size, durable)
    core = Core(storage)
    core.acl.root = root
    replication = Replication(core, storage) if is_replicated(storage) else None
    return Store(core, SchemaCache(core.storage, core.events, core.batch_schema),
                 AppEntries(core.storage, core.events), data_dir, replication)


def _ensure_root(core: Core, data_dir: Path, admin_password: str | None) -> str:
    password = admin_password or _stored_or_new_password(data_dir)
    found = core.storage.reader().principal_by_name(ROOT_NAME)
    if found is not None and verify_password(found[1], password):
        return found[0]
    hashed = hash_password(password)
    with core.transaction() as tx:
        found = tx.w.principal_by_name(ROOT_NAME)  # another replica may have made it since
        uuid = found[0] if found else new_uuid()
        if core.graph.get(uuid) is None:
            tx.put_object(Obj(uuid, 0, uuids.Class.Principal, uuids.Special.Unowned, False, ""))
            tx.set_member(uuids.Class.Principal, uuid, True)
            tx.put_config(uuids.App.Info, uuid, {"name": "Administrator"}, None)
        tx.w.put_principal(uuid, ROOT_NAME, hashed)
    return uuid


def _stored_or_new_password(data_dir: Path) -> str:
    path = data_dir / PASSWORD_FILE
    if path.exists():
        return path.read_text().strip()
    password = secrets.token_urlsafe(18)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(password + "\n")
    print(f"Generated the admin password, saved in {path} (mode 0600; never printed)",
          flush=True)
    return password
