"""A backup directory: its layout, manifest, README and MAC; the restore's first step.

The manifest (``manifest.json``) names the format, when and by which versions the backup
was taken, every file with its SHA-256, the repos with their refs and the table row counts.
``manifest.mac`` authenticates it: an HMAC-SHA256 of its bytes under a key derived (HKDF)
from one key of an escrow key file (the stack's, or one kept for backups), which no backup
holds; the MAC file names that key's id, never the key. A restore checks the MAC before
anything else, then that the files are exactly those listed, copying each into a private
temporary directory while checking its checksum, and reads only that copy. Every file is
created 0600 and every directory 0700.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import stat
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path
from typing import BinaryIO, TypedDict

from cryptography.hazmat.primitives.hashes import SHA256
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from fplus.jsontypes import is_object, string_map

from ..escrow import EscrowKeyError, Keyring

FORMAT = "fplus-backup/2"
MANIFEST = "manifest.json"
MAC = "manifest.mac"
MAC_ALG = "HMAC-SHA256"
README = "README.txt"
CONFIGDB = "config-store/configdb.json"
AUTH = "config-store/auth.json"
TABLES = "cluster-manager/tables.json"
REPOS = "repos"
ESCROW_LINE = ("The secret escrow key is NOT in this backup, by design: it is the file the "
               "Cluster Manager runs with (--secret-escrow; `cluster-manager up`: "
               "DATA_DIR/cluster-manager/escrow.key). Keep a copy of it apart from this "
               "backup; a restore needs that same file to re-seal secrets.")
MAC_LINE = (f"{MAC} authenticates this backup with a key derived from the key file it was "
            "taken with (--backup-key-file; by default that escrow key file): a restore "
            "needs that same file and refuses a backup changed in any way.")
NOT_TAKEN = ["the secret escrow key (kept apart: see escrowKey)",
             "bootstrap tokens (issue new bootstrap URLs after a restore)",
             "Config Store tokens and passwords (password hashes only)",
             "the root principal (the target keeps its own)",
             "the leader lease"]
_WRITE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
_KEY_ID_LIMIT = 64


class BackupError(RuntimeError):
    """A backup or restore refused, in one line (nothing written by a restore)."""


def create(path: Path) -> BinaryIO:
    """A new file ``path`` (directories made 0700), created 0600 whatever the umask; never
    an existing file or a symbolic link."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    return os.fdopen(os.open(path, _WRITE, 0o600), "wb")


def write_json(root: Path, name: str, value: object) -> bytes:
    """``value`` as ``root/name``, readable by its owner only; the bytes written."""
    data = (json.dumps(value, indent=1, sort_keys=True) + "\n").encode()
    with create(root / name) as out:
        out.write(data)
    return data


def _versions() -> dict[str, str]:
    git = subprocess.run(["git", "--version"], capture_output=True, text=True, check=False)
    return {"fplus-edge-manager": metadata.version("fplus-edge-manager"),
            "git": git.stdout.strip().removeprefix("git version ")}


def _mac(keyring: Keyring, key_id: str, data: bytes) -> str:
    """HMAC-SHA256 of ``data`` under a key derived from the key file's key ``key_id``
    (never the escrow key itself)."""
    key = HKDF(algorithm=SHA256(), length=32, salt=None,
               info=f"{FORMAT} manifest MAC {key_id}".encode()).derive(keyring.key(key_id))
    return hmac.new(key, data, "sha256").hexdigest()


class RepoTaken(TypedDict):
    """A repo in the manifest: its refs as bundled."""

    refs: dict[str, str]


class Manifest(TypedDict):
    """What a backup took (``manifest.json``); a restore reads it as :func:`opened` checked
    it."""

    format: str
    taken: str
    versions: dict[str, str]
    source: dict[str, str]
    files: dict[str, str]
    """File -> its SHA-256."""
    repos: dict[str, RepoTaken]
    tables: dict[str, int]
    """Table -> its rows taken."""
    notTaken: list[str]
    escrowKey: str


def finish(root: Path, repos: dict[str, RepoTaken], tables: dict[str, int],
           source: dict[str, str], keyring: Keyring) -> Manifest:
    """Write the README, the manifest (checksums of every file written) and its MAC."""
    taken = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    with create(root / README) as out:
        out.write(
            f"A backup of an fplus stack ({FORMAT}), taken {taken}.\n\n"
            "config-store/  the ConfigDB and Auth dumps (GET /v2/dump; POST /load takes them)\n"
            "repos/         every Git repo as a git bundle\n"
            "cluster-manager/tables.json  sealing key pins and escrowed (encrypted) values\n"
            f"{MANIFEST}  what was taken, versions, time, SHA-256 of every file\n"
            f"{MAC}   its HMAC-SHA256 (the key's id, never the key)\n\n"
            f"{ESCROW_LINE}\n\n{MAC_LINE}\n\nRestore into an empty stack: cluster-manager "
            "restore DIR (see docs/deploy.md).\n".encode())
    files = {str(p.relative_to(root)): sha256(p) for p in sorted(root.rglob("*"))
             if p.is_file()}
    manifest = Manifest(format=FORMAT, taken=taken, versions=_versions(), source=source,
                        files=files, repos=repos, tables=tables, notTaken=NOT_TAKEN,
                        escrowKey=ESCROW_LINE)
    data = write_json(root, MANIFEST, manifest)
    write_json(root, MAC, {"alg": MAC_ALG, "keyId": keyring.current,
                           "mac": _mac(keyring, keyring.current, data)})
    return manifest


def _authentic(root: Path, data: bytes, keyring: Keyring) -> None:
    """The manifest's bytes ``data`` match the backup's MAC under ``keyring``."""
    try:
        doc = json.loads((root / MAC).read_bytes())
    except FileNotFoundError:
        raise BackupError(f"{root}: no {MAC}: the backup is not authenticated (taken by a "
                          f"version before {FORMAT}, or its MAC was removed); refused: "
                          "restore it with the version that took it, or take a new "
                          "backup") from None
    except (OSError, ValueError):
        doc = None
    key_id = doc.get("keyId") if isinstance(doc, dict) else None
    if (not isinstance(doc, dict) or doc.get("alg") != MAC_ALG or not isinstance(key_id, str)
            or not 0 < len(key_id) <= _KEY_ID_LIMIT or not isinstance(doc.get("mac"), str)):
        raise BackupError(f"{root / MAC}: not an {MAC_ALG} of the manifest: the backup is "
                          "not authentic; refused")
    try:
        expected = _mac(keyring, key_id, data)
    except EscrowKeyError:
        raise BackupError(f"{root}: not authentic under the key file given: it was taken "
                          f"with key {key_id!r}, which that file does not hold (another "
                          "stack's, or rotated since: give the file the backup was taken "
                          "with)") from None
    if not hmac.compare_digest(expected, doc["mac"]):
        raise BackupError(f"{root}: not authentic: {MANIFEST} does not match its {MAC} "
                          "(changed since the backup was taken); refused")


def _parse(root: Path, data: bytes) -> dict[str, object]:
    """The authenticated manifest, of this format and listing the files a restore needs."""
    try:
        manifest = json.loads(data)
    except ValueError as exc:
        raise BackupError(f"{root / MANIFEST}: unreadable: {exc}") from None
    if not is_object(manifest) or manifest.get("format") != FORMAT:
        found = manifest.get("format") if isinstance(manifest, dict) else None
        raise BackupError(f"{root / MANIFEST}: unknown backup format {found!r} "
                          f"(this version restores {FORMAT})")
    files = manifest.get("files")
    if (not isinstance(files, dict) or not {CONFIGDB, AUTH, TABLES} <= set(files)
            or not all(isinstance(d, str) for d in files.values())):
        raise BackupError(f"{root / MANIFEST}: incomplete: it lists no Config Store dumps "
                          "or tables")
    return manifest


def _tree(root: Path) -> set[str]:
    """The regular files under ``root``, by relative name; BackupError for a symbolic
    link or anything else."""
    found = set()
    for where, dirs, names in os.walk(root):
        for name in [*dirs, *names]:
            path = Path(where, name)
            mode = path.lstat().st_mode
            if stat.S_ISREG(mode):
                found.add(path.relative_to(root).as_posix())
            elif not stat.S_ISDIR(mode):
                raise BackupError(f"{root}: not authentic: {path.relative_to(root)} is not a "
                                  "regular file or directory")
    return found


def _copy(source: Path, target: Path) -> str:
    """Copy ``source`` (never through a symbolic link) to the new file ``target``; the
    SHA-256 of the bytes copied."""
    digest = hashlib.sha256()
    with os.fdopen(os.open(source, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0)), "rb") as src, \
            create(target) as out:
        for block in iter(lambda: src.read(1 << 20), b""):
            digest.update(block)
            out.write(block)
    return digest.hexdigest()


@contextmanager
def opened(root: Path, keyring: Keyring) -> Iterator[tuple[Path, dict[str, object]]]:
    """The backup in ``root``, authenticated and copied into a private temporary directory:
    that copy and the manifest. BackupError (one line) for anything else: no manifest, a MAC
    that does not match under ``keyring``, a file missing, added or changed."""
    try:
        data = (root / MANIFEST).read_bytes()
    except FileNotFoundError:
        raise BackupError(f"{root}: no {MANIFEST}: not a backup") from None
    except OSError as exc:
        raise BackupError(f"{root / MANIFEST}: unreadable: {exc.strerror or exc}") from None
    _authentic(root, data, keyring)
    manifest = _parse(root, data)
    files = string_map(manifest["files"])  # _parse checked: every value a string
    found = _tree(root)
    missing = sorted(set(files) - found)
    if missing:
        raise BackupError(f"{root}: incomplete backup: {missing[0]} is missing")
    extra = sorted(found - set(files) - {MANIFEST, MAC})
    if extra:
        raise BackupError(f"{root}: not authentic: {extra[0]} is not in {MANIFEST}")
    with tempfile.TemporaryDirectory(prefix="fplus-restore-") as tmp:
        copy = Path(tmp)
        for name, digest in sorted(files.items()):
            try:
                copied = _copy(root / name, copy / name)
            except OSError as exc:
                raise BackupError(f"{root / name}: cannot be copied to check it: "
                                  f"{exc.strerror or exc}") from None
            if copied != digest:
                raise BackupError(f"{root}: {name} differs from its checksum in {MANIFEST}")
        yield copy, manifest


def sha256(path: Path) -> str:
    """The SHA-256 of a file's bytes."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def load_json(root: Path, name: str) -> object:
    """A JSON file of a backup copy :func:`opened` checked."""
    found: object = json.loads((root / name).read_text())
    return found
