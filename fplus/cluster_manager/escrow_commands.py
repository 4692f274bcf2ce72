"""``cluster-manager escrow init|rotate`` and the ``--secret-escrow`` option of ``serve``."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from .db import Database, DatabaseError, open_database
from .escrow import SCHEMA, EscrowKeyError, Keyring, SealedKeys, place, rewrap
from .escrow import keyring as keyfile
from .settings import default_database_url

COMMAND = "escrow"


def add_option(parser: argparse.ArgumentParser) -> None:
    """``--secret-escrow KEYFILE`` (env ``FPLUS_SECRET_ESCROW``)."""
    parser.add_argument("--secret-escrow", type=Path, metavar="KEYFILE",
                        default=os.environ.get("FPLUS_SECRET_ESCROW") or None,
                        help="keep every sealed value, encrypted under this escrow key file "
                             "(`cluster-manager escrow init FILE`, mode 0600), so secrets are "
                             "sealed again when an edge's sealing key changes (default: off, "
                             "values are write-only; env FPLUS_SECRET_ESCROW)")
    parser.add_argument("--reseal-interval", type=float, default=10.0, metavar="SECONDS",
                        help="how often the leader compares each cluster's escrowed secrets "
                             "with the sealing certificate its edge reports")


def add_parsers(sub: argparse._SubParsersAction) -> None:
    """The ``escrow`` command and its ``init`` and ``rotate`` subcommands."""
    escrow = sub.add_parser(COMMAND, help="the secret escrow key file")
    actions = escrow.add_subparsers(dest="escrow_command", required=True)
    init = actions.add_parser("init", help="make a new escrow key file (256-bit key, 0600)")
    init.add_argument("keyfile", type=Path)
    rotate = actions.add_parser("rotate", help="add a new escrow key, re-wrap every escrowed "
                                               "value's data key under it, retire the old keys")
    rotate.add_argument("keyfile", type=Path)
    rotate.add_argument("--data-dir", type=Path, required=True)
    rotate.add_argument("--database", default=os.environ.get("FPLUS_DATABASE"),
                        help="the Cluster Manager's database (as serve --database)")


def keyring_of(args: argparse.Namespace, prog: str) -> Keyring | None:
    """The keyring ``--secret-escrow`` names (None: escrow off); one line and exit for a key
    file that cannot be used (checked before anything else is opened)."""
    try:
        return keyfile.load(args.secret_escrow) if args.secret_escrow else None
    except EscrowKeyError as exc:
        raise SystemExit(f"{prog}: {exc}") from None


def run(args: argparse.Namespace, prog: str) -> str:
    """Run ``escrow init`` or ``escrow rotate``; what to print."""
    try:
        if args.escrow_command == "init":
            keyfile.save(args.keyfile, keyfile.generate(), replace=False)
            return (f"Made the escrow key file {args.keyfile} (mode 0600). Back it up apart from "
                    "the database: without it escrowed values cannot be used.")
        url = args.database or default_database_url(args.data_dir)
        if url.startswith("sqlite:///") and not Path(url.removeprefix("sqlite:///")).is_file():
            raise EscrowKeyError(f"no Cluster Manager database at {url}: give the --data-dir "
                                 "(or --database) the Cluster Manager runs with; nothing "
                                 "was changed")
        return _rotate(args.keyfile, open_database(url))
    except EscrowKeyError as exc:
        raise SystemExit(f"{prog}: {exc}") from None
    except DatabaseError as exc:
        raise SystemExit(f"{prog}: {exc}") from None


def _rotate(path: Path, db: Database) -> str:
    """Add a key, re-wrap every data key under it (values untouched), retire the old keys.
    The file keeps both until every row is re-wrapped, so a crash loses nothing."""
    old = keyfile.load(path)
    new = old.with_new_key()
    keyfile.save(path, new, replace=True)
    db.prepare(SCHEMA)
    records = SealedKeys(db)
    count = 0
    for record in records.escrowed():
        if record.envelope is None or record.envelope.key_id == new.current:
            continue
        where = place(record.cluster, record.namespace, record.name, record.key)
        records.rewrapped(record, rewrap(new, record.envelope, where))
        count += 1
    keyfile.save(path, new.only_current(), replace=True)
    return (f"Escrow key rotated to {new.current}: {count} data keys re-wrapped, "
            f"{len(old.keys)} old key(s) retired from {path}.")
