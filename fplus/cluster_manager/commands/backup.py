"""``cluster-manager backup --out DIR`` and ``cluster-manager restore DIR``.

A backup holds the Config Store's two dumps, every Git repo as a bundle, the Cluster
Manager's sealing key pins and escrow records, and a manifest (:mod:`..backup.directory`)
with its MAC; never the escrow key, bootstrap tokens, Config Store tokens or passwords. The
MAC's key comes from a key file no backup holds: ``--backup-key-file`` (default: the escrow
key file of ``FPLUS_SECRET_ESCROW``, else ``DATA_DIR/escrow.key`` as ``up`` keeps it); with
none, both are refused. Both run with
administrator credentials (``FPLUS_USER`` / ``FPLUS_PASSWORD``, as ``seed``) on the machine
that holds the Git server's repos (``--git-repos``), while the stack runs.

A restore goes into an empty stack (fresh data dirs and database, its services seeded,
the Cluster Manager stopped): it checks everything first (the manifest's MAC before
anything of the target is opened, then its format and checksums, the bundles, that the
target holds nothing the backup would collide with, that no Cluster Manager answers where
the target's Directory says it runs) and writes nothing unless all is well; then the
tables, the repos, the ConfigDB and the Auth dumps, in that order, all read from the
private copy the check made. The Cluster Manager is started again afterwards.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from pathlib import Path

import requests

from fplus.config_store import uuids
from fplus.config_store.client import ConfigStoreClient, ConfigStoreError, as_admin

from ..backup import BackupError, directory, repos, store, tables
from ..db import Database, DatabaseError, open_database
from ..escrow import EscrowKeyError, Keyring
from ..escrow import keyring as keyfile
from ..model.settings import default_database_url

BACKUP, RESTORE = "backup", "restore"
SQLITE = "sqlite:///"
COMMANDS = (BACKUP, RESTORE)
KEY_FILE = "escrow.key"
"""The escrow key file ``up`` keeps in the Cluster Manager's data dir."""
SHARED_REPOS = frozenset({uuids.Shared.HelmChartsRepo, uuids.Shared.FluxSystemRepo})
"""Repos a fresh stack has made already; a restore sets their refs from the backup."""


def add_parsers(sub: argparse._SubParsersAction,
                store_options: Callable[[argparse.ArgumentParser], None]) -> None:
    """The ``backup`` and ``restore`` commands."""
    backup = sub.add_parser(BACKUP, help="take a backup of the stack into a new directory "
                                         "(administrator credentials)")
    backup.add_argument("--out", type=Path, required=True, metavar="DIR",
                        help="a new (or empty) directory")
    restore = sub.add_parser(RESTORE, help="restore a backup into an empty stack "
                                           "(administrator credentials)")
    restore.add_argument("backup_dir", type=Path, metavar="DIR")
    for parser in (backup, restore):
        store_options(parser)
        parser.add_argument("--git-repos", type=Path, required=True,
                            help="the Git server's repos directory (its DATA_DIR/repos)")
        parser.add_argument("--database", default=os.environ.get("FPLUS_DATABASE"),
                            help="the Cluster Manager's database (as serve --database; "
                                 "default: the SQLite file in --data-dir)")
        parser.add_argument("--backup-key-file", type=Path, metavar="KEYFILE",
                            default=os.environ.get("FPLUS_SECRET_ESCROW") or None,
                            help="the key file whose key authenticates backups: the escrow "
                                 "key file the Cluster Manager runs with, or one made with "
                                 "`cluster-manager escrow init FILE` for backups alone "
                                 "(default: FPLUS_SECRET_ESCROW, else DATA_DIR/escrow.key)")


def run(args: argparse.Namespace, prog: str) -> str:
    """Run ``backup`` or ``restore``; what to print. SystemExit with one line if refused.
    The key file is read first; a restore then authenticates the backup before it opens
    anything of the target."""
    url = args.config_store.rstrip("/")
    try:
        keyring = _keyring(args.backup_key_file, args.data_dir)
        if args.command == BACKUP:
            return _on_target(args, url, lambda cs, db: _backup(cs, db, args.git_repos,
                                                                args.out, keyring))
        with directory.opened(args.backup_dir, keyring) as (root, taken):
            return _on_target(args, url, lambda cs, db: _restore(cs, db, args.git_repos,
                                                                 root, taken))
    except (BackupError, DatabaseError) as exc:
        raise SystemExit(f"{prog} {args.command}: {exc}") from None
    except ConfigStoreError as exc:
        raise SystemExit(f"{prog} {args.command}: the Config Store at {url} answered "
                         f"{exc.status}: {exc}") from None


def _keyring(given: Path | None, data_dir: Path) -> Keyring:
    """The key file that authenticates backups: ``given``, else ``up``'s escrow key file in
    ``data_dir``; BackupError if there is none or it cannot be used."""
    default = data_dir / KEY_FILE
    path = given or (default if default.exists() else None)
    if path is None:
        raise BackupError("no key to authenticate backups with: give --backup-key-file "
                          "KEYFILE (the escrow key file the Cluster Manager runs with, or one "
                          "made with `cluster-manager escrow init FILE` and kept apart from "
                          f"the backups); neither FPLUS_SECRET_ESCROW nor {default} names one")
    try:
        return keyfile.load(path)
    except EscrowKeyError as exc:
        raise BackupError(f"--backup-key-file: {exc}") from None


def _on_target(args: argparse.Namespace, url: str,
               work: Callable[[ConfigStoreClient, Database], str]) -> str:
    """``work`` on the stack's database and its Config Store (as its administrator)."""
    db = _database(args.database or default_database_url(args.data_dir))
    try:
        return as_admin(url, lambda cs: work(cs, db))
    finally:
        db.close()


def _database(url: str) -> Database:
    """The Cluster Manager's database; a SQLite file must exist (a wrong --data-dir would
    otherwise give an empty one)."""
    if url.startswith(SQLITE) and not Path(url.removeprefix(SQLITE)).is_file():
        raise BackupError(f"no Cluster Manager database at {url}: give the --data-dir (or "
                          "--database) the Cluster Manager runs with")
    return open_database(url)


def _running_manager(cs: ConfigStoreClient) -> str | None:
    """The URL of the target's Cluster Manager (as the Directory names it) if something
    answers there."""
    url = cs.service_url(uuids.Service.Clusters)
    if url is None:
        return None
    try:
        requests.get(url.rstrip("/") + "/ping", timeout=3)
    except requests.exceptions.SSLError:
        return url  # something listens there
    except requests.RequestException:
        return None
    return url


def _backup(cs: ConfigStoreClient, db: Database, repos_dir: Path, out: Path,
            keyring: Keyring) -> str:
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise BackupError(f"--out {out}: exists and is not an empty directory")
    configdb, auth = store.export(cs)  # refused (403) before anything is written
    if out.exists():
        out.chmod(0o700)  # an empty directory given, before anything is written into it
    out.mkdir(parents=True, exist_ok=True, mode=0o700)
    directory.write_json(out, directory.CONFIGDB, configdb)
    directory.write_json(out, directory.AUTH, auth)
    taken_repos = repos.bundle_all(repos_dir, out)
    rows = tables.dump(db)
    directory.write_json(out, directory.TABLES, rows)
    directory.finish(out, taken_repos, {t: len(r) for t, r in rows.items()},
                     {"configStore": cs.base_url, "database": db.description}, keyring)
    clusters = len(store.edge_clusters(configdb))
    return (f"Backed up {clusters} cluster(s), {store.principals(auth)} principal(s), "
            f"{len(taken_repos)} repo(s) and {sum(len(r) for r in rows.values())} table "
            f"row(s) into {out} (manifest: {out / directory.MANIFEST}, authenticated with "
            f"key {keyring.current}).\n{directory.ESCROW_LINE}\n{directory.MAC_LINE}")


def _restore(cs: ConfigStoreClient, db: Database, repos_dir: Path, root: Path,
             taken: dict[str, object]) -> str:
    """Restore the authenticated copy ``root`` of a backup (its manifest ``taken``)."""
    wanted_repos = repos.check(root, taken.get("repos"))
    rows = tables.check(directory.load_json(root, directory.TABLES))
    configdb, auth = store.plan(directory.load_json(root, directory.CONFIGDB),
                                directory.load_json(root, directory.AUTH), store.export(cs))
    stray = repos.foreign(repos_dir, SHARED_REPOS)
    if stray:
        raise BackupError(f"the target's Git repos are not empty: {repos_dir} holds "
                          f"{len(stray)} repo(s) besides the shared ones; restore into a "
                          "fresh stack")
    filled = {t: n for t, n in tables.counts(db).items() if n}
    if filled:
        raise BackupError(f"the target Cluster Manager database ({db.description}) is not "
                          f"empty: {filled}; restore into a fresh one")
    running = _running_manager(cs)
    if running:
        raise BackupError(f"the Cluster Manager at {running} is running: stop it while "
                          "restoring (it would commission clusters whose accounts are not "
                          "loaded yet), then start it again")
    tables.load(db, rows)
    repos.restore(root, repos_dir, wanted_repos)
    store.load(cs, configdb, auth)
    return (f"Restored the backup taken {taken.get('taken')} into the Config Store at "
            f"{cs.base_url}, {len(wanted_repos)} repo(s) into {repos_dir} and the Cluster "
            f"Manager's tables into {db.description}. Start the Cluster Manager (with the "
            "same escrow key file); bootstrap URLs issued before the backup no longer work.\n"
            f"{directory.ESCROW_LINE}")
