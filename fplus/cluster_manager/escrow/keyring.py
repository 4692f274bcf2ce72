"""The escrow key file: 256-bit key-encryption keys by id, one of them current.

``{"version": 1, "current": "<id>", "keys": {"<id>": "<base64 of 32 bytes>"}}``, mode 0600.
A rotation adds a key, makes it current, re-wraps every data key and then drops the old ones
(:mod:`.commands`); until then both are kept, so a crash in between loses nothing.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import secrets
import stat
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

KEY_BYTES = 32
VERSION = 1


class EscrowKeyError(ValueError):
    """The escrow key file cannot be used; the message is one line naming it."""


@dataclass(frozen=True)
class Keyring:
    """Key-encryption keys by id; :attr:`current` wraps new data keys."""

    current: str
    keys: dict[str, bytes] = field(repr=False)

    def key(self, key_id: str) -> bytes:
        """The key ``key_id``; EscrowKeyError if this file no longer holds it."""
        found = self.keys.get(key_id)
        if found is None:
            raise EscrowKeyError(f"the escrow key file has no key {key_id!r} (retired by a "
                                 "rotation that did not finish, or the wrong file)")
        return found

    def with_new_key(self) -> Keyring:
        """This keyring plus a fresh key, made current."""
        key_id = _new_id()
        return Keyring(key_id, {**self.keys, key_id: secrets.token_bytes(KEY_BYTES)})

    def only_current(self) -> Keyring:
        """This keyring without its retired keys."""
        return Keyring(self.current, {self.current: self.keys[self.current]})


def _new_id() -> str:
    return "k-" + secrets.token_hex(6)


def generate() -> Keyring:
    """A keyring with one fresh key."""
    key_id = _new_id()
    return Keyring(key_id, {key_id: secrets.token_bytes(KEY_BYTES)})


def load(path: Path) -> Keyring:
    """The keyring in ``path``; EscrowKeyError (one line) for a missing file, a mode other
    than owner-only, or anything but the format above with 32-byte keys."""
    try:
        mode = path.stat().st_mode
        text = path.read_text()
    except OSError as exc:
        raise EscrowKeyError(f"escrow key file {path}: {exc.strerror or exc}") from None
    if stat.S_IMODE(mode) & 0o077:
        raise EscrowKeyError(f"escrow key file {path} is mode {stat.S_IMODE(mode):04o}; it must "
                             f"be readable by its owner only: chmod 600 {path}")
    try:
        doc = json.loads(text)
        keys = {str(k): base64.b64decode(v, validate=True) for k, v in doc["keys"].items()}
        current = doc["current"] if isinstance(doc["current"], str) else repr(doc["current"])
        if doc.get("version") != VERSION:
            raise ValueError("not version 1")
    except (ValueError, KeyError, TypeError, AttributeError, binascii.Error):
        raise EscrowKeyError(f"escrow key file {path} is not an escrow key file (make one "
                             "with `cluster-manager escrow init FILE`)") from None
    bad = sorted(k for k, v in keys.items() if len(v) != KEY_BYTES)
    if bad or current not in keys:
        why = (f"key {bad[0]!r} is not {KEY_BYTES * 8} bits" if bad
               else f"its current key {current!r} is not among its keys")
        raise EscrowKeyError(f"escrow key file {path}: {why}")
    return Keyring(current, keys)


def save(path: Path, keyring: Keyring, *, replace: bool) -> None:
    """Write ``keyring`` to ``path`` (mode 0600, atomically); refuse to overwrite unless
    ``replace``."""
    if not replace and path.exists():
        raise EscrowKeyError(f"escrow key file {path} exists; it is not overwritten")
    doc = {"version": VERSION, "current": keyring.current,
           "keys": {k: base64.b64encode(v).decode() for k, v in keyring.keys.items()}}
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w") as out:
            json.dump(doc, out)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
