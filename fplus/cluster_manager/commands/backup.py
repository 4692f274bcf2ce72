"""``cluster-manager backup --out DIR`` and ``cluster-manager restore DIR``.

A backup holds the Config Store's two dumps, every Git repo as a bundle, the Cluster
Manager's sealing key pins and escrow records, and a manifest (:mod:`..backup.manifest`);
never the escrow key, bootstrap tokens, Config Store tokens or passwords. Both run with
administrator credentials (``FPLUS_USER`` / ``FPLUS_PASSWORD``, as ``seed``) on the machine
that holds the Git server's repos (``--git-repos``), while the stack runs.

A restore goes into an empty stack (fresh data dirs and database, its services seeded,
the Cluster Manager stopped): it checks everything first (the manifest's format and
checksums, the bundles, that the target holds nothing the backup would collide with, that
no Cluster Manager answers where the target's Directory says it runs) and writes nothing
unless all is well; then the tables, the repos, the ConfigDB and the Auth
dumps, in that order. The Cluster Manager is started again afterwards.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from pathlib import Path

import requests

from fplus.config_store import uuids
from fplus.config_store.client import ConfigStoreClient, ConfigStoreError, as_admin

from ..backup import BackupError, manifest, repos, store, tables
from ..db import Database, DatabaseError, open_database
from ..model.settings import default_database_url

BACKUP, RESTORE = "backup", "restore"
SQLITE = "sqlite:///"
COMMANDS = (BACKUP, RESTORE)
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


def run(args: argparse.Namespace, prog: str) -> str:
    """Run ``backup`` or ``restore``; what to print. SystemExit with one line if refused."""
    url = args.config_store.rstrip("/")
    try:
        db = _database(args.database or default_database_url(args.data_dir))
        try:
            if args.command == BACKUP:
                return as_admin(url, lambda cs: _backup(cs, db, args.git_repos, args.out))
            return as_admin(url, lambda cs: _restore(cs, db, args.git_repos, args.backup_dir))
        finally:
            db.close()
    except (BackupError, DatabaseError) as exc:
        raise SystemExit(f"{prog} {args.command}: {exc}") from None
    except ConfigStoreError as exc:
        raise SystemExit(f"{prog} {args.command}: the Config Store at {url} answered "
                         f"{exc.status}: {exc}") from None


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


def _backup(cs: ConfigStoreClient, db: Database, repos_dir: Path, out: Path) -> str:
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise BackupError(f"--out {out}: exists and is not an empty directory")
    configdb, auth = store.export(cs)  # refused (403) before anything is written
    out.mkdir(parents=True, exist_ok=True, mode=0o700)
    manifest.write_json(out, manifest.CONFIGDB, configdb)
    manifest.write_json(out, manifest.AUTH, auth)
    taken_repos = repos.bundle_all(repos_dir, out)
    rows = tables.dump(db)
    manifest.write_json(out, manifest.TABLES, rows)
    manifest.finish(out, taken_repos, {t: len(r) for t, r in rows.items()},
                    {"configStore": cs.base_url, "database": db.description})
    clusters = len(configdb.get("objects", {}).get(uuids.Class.EdgeCluster, {}))
    return (f"Backed up {clusters} cluster(s), {len(auth['principals'])} principal(s), "
            f"{len(taken_repos)} repo(s) and {sum(len(r) for r in rows.values())} table "
            f"row(s) into {out} (manifest: {out / manifest.MANIFEST}).\n"
            f"{manifest.ESCROW_LINE}")


def _restore(cs: ConfigStoreClient, db: Database, repos_dir: Path, root: Path) -> str:
    taken = manifest.read(root)
    wanted_repos = repos.check(root, taken.get("repos"))
    rows = tables.check(manifest.load_json(root, manifest.TABLES))
    configdb, auth = store.plan(manifest.load_json(root, manifest.CONFIGDB),
                                manifest.load_json(root, manifest.AUTH), store.export(cs))
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
            f"{manifest.ESCROW_LINE}")
