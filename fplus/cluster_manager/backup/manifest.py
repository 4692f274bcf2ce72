"""A backup directory: its layout, manifest and README.

The manifest (``manifest.json``) names the format, when and by which versions the backup
was taken, every file with its SHA-256, the repos with their refs and the table row counts.
A restore refuses a directory whose manifest is missing or of an unknown format, or whose
files are missing or differ from their checksums: nothing is written then.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import time
from importlib import metadata
from pathlib import Path
from typing import Any

FORMAT = "fplus-backup/1"
MANIFEST = "manifest.json"
README = "README.txt"
CONFIGDB = "config-store/configdb.json"
AUTH = "config-store/auth.json"
TABLES = "cluster-manager/tables.json"
REPOS = "repos"
ESCROW_LINE = ("The secret escrow key is NOT in this backup, by design: it is the file the "
               "Cluster Manager runs with (--secret-escrow; `cluster-manager up`: "
               "DATA_DIR/cluster-manager/escrow.key). Keep a copy of it apart from this "
               "backup; a restore needs that same file to re-seal secrets.")
NOT_TAKEN = ["the secret escrow key (kept apart: see escrowKey)",
             "bootstrap tokens (issue new bootstrap URLs after a restore)",
             "Config Store tokens and passwords (password hashes only)",
             "the root principal (the target keeps its own)",
             "the leader lease"]


class BackupError(RuntimeError):
    """A backup or restore refused, in one line (nothing written by a restore)."""


def sha256(path: Path) -> str:
    """The SHA-256 of a file's bytes."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def write_json(root: Path, name: str, value: Any) -> None:
    """``value`` as ``root/name`` (directories made), readable by its owner only."""
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    path.write_text(json.dumps(value, indent=1, sort_keys=True) + "\n")
    path.chmod(0o600)


def _versions() -> dict[str, str]:
    git = subprocess.run(["git", "--version"], capture_output=True, text=True, check=False)
    return {"fplus-edge-manager": metadata.version("fplus-edge-manager"),
            "git": git.stdout.strip().removeprefix("git version ")}


def finish(root: Path, repos: dict[str, Any], tables: dict[str, int],
           source: dict[str, str]) -> dict[str, Any]:
    """Write the manifest (checksums of every file already written) and the README."""
    files = {str(p.relative_to(root)): sha256(p) for p in sorted(root.rglob("*"))
             if p.is_file() and p.name not in (MANIFEST, README)}
    manifest = {"format": FORMAT, "taken": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "versions": _versions(), "source": source, "files": files, "repos": repos,
                "tables": tables, "notTaken": NOT_TAKEN, "escrowKey": ESCROW_LINE}
    write_json(root, MANIFEST, manifest)
    (root / README).write_text(
        f"A backup of an fplus stack ({FORMAT}), taken {manifest['taken']}.\n\n"
        "config-store/  the ConfigDB and Auth dumps (GET /v2/dump; POST /load takes them)\n"
        "repos/         every Git repo as a git bundle\n"
        "cluster-manager/tables.json  sealing key pins and escrowed (encrypted) values\n"
        f"{MANIFEST}  what was taken, versions, time, SHA-256 of every file\n\n"
        f"{ESCROW_LINE}\n\nRestore into an empty stack: cluster-manager restore DIR "
        "(see docs/deploy.md).\n")
    return manifest


def read(root: Path) -> dict[str, Any]:
    """The manifest of a complete backup of a known format; BackupError otherwise."""
    try:
        manifest = json.loads((root / MANIFEST).read_text())
    except FileNotFoundError:
        raise BackupError(f"{root}: no {MANIFEST}: not a backup") from None
    except (OSError, ValueError) as exc:
        raise BackupError(f"{root / MANIFEST}: unreadable: {exc}") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        found = manifest.get("format") if isinstance(manifest, dict) else None
        raise BackupError(f"{root / MANIFEST}: unknown backup format {found!r} "
                          f"(this version restores {FORMAT})")
    files = manifest.get("files")
    if not isinstance(files, dict) or not {CONFIGDB, AUTH, TABLES} <= set(files):
        raise BackupError(f"{root / MANIFEST}: incomplete: it lists no Config Store dumps "
                          "or tables")
    for name, digest in sorted(files.items()):
        path = root / name
        if ".." in Path(name).parts or not path.is_file():
            raise BackupError(f"{root}: incomplete backup: {name} is missing")
        if sha256(path) != digest:
            raise BackupError(f"{root}: {name} differs from its checksum in {MANIFEST}")
    return manifest


def load_json(root: Path, name: str) -> Any:
    """A JSON file of a backup whose manifest :func:`read` checked."""
    return json.loads((root / name).read_text())
