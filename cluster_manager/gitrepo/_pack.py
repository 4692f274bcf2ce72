"""Write a batch of new objects as one git pack (+ version-2 index) instead of loose files.

One commit's objects (blobs, trees, the commit) become two files, written to a temporary name,
fsynced and renamed into ``objects/pack`` (``.pack`` first, ``.idx`` last: readers discover packs
by their index). Creating files is the dominant cost of a loose-object commit, so this is what
lets a batch of changes cost about the same as a single one.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
import struct
import zlib
from collections.abc import Mapping
from pathlib import Path

RawObject = tuple[int, bytes]  # (git object type: 1 commit, 2 tree, 3 blob, 4 tag; content)


def git_hash(otype: int, data: bytes) -> bytes:
    """The raw 20-byte object id of ``data`` stored as ``otype``."""
    kind = {1: b"commit", 2: b"tree", 3: b"blob", 4: b"tag"}[otype]
    return hashlib.sha1(b"%s %d\x00" % (kind, len(data)) + data, usedforsecurity=False).digest()


def write_pack(pack_dir: Path, objects: Mapping[bytes, RawObject]) -> str:
    """Store ``objects`` (raw id → object) as one pack in ``pack_dir``; return its base name."""
    body = bytearray(b"PACK" + struct.pack(">II", 2, len(objects)))
    entries: list[tuple[bytes, int, int]] = []  # raw id, crc32, offset
    for raw, (otype, data) in objects.items():
        record = _header(otype, len(data)) + zlib.compress(data, 1)
        entries.append((raw, zlib.crc32(record), len(body)))
        body += record
    checksum = hashlib.sha1(body, usedforsecurity=False).digest()
    body += checksum
    name = f"pack-{checksum.hex()}"
    _write_file(pack_dir / f"{name}.pack", bytes(body))
    _write_file(pack_dir / f"{name}.idx", _index(entries, checksum))
    return name


def pack_ids(idx_path: Path) -> list[bytes]:
    """Raw ids of every object in the pack indexed by ``idx_path`` (index version 2 only)."""
    data = idx_path.read_bytes()
    if data[:8] != b"\xfftOc\x00\x00\x00\x02":
        raise ValueError(f"{idx_path} is not a version-2 pack index")
    count = struct.unpack_from(">I", data, 8 + 255 * 4)[0]
    start = 8 + 256 * 4
    return [data[start + 20 * i:start + 20 * (i + 1)] for i in range(count)]


def _header(otype: int, size: int) -> bytes:
    out = bytearray()
    byte = (otype << 4) | (size & 0x0F)
    size >>= 4
    while size:
        out.append(byte | 0x80)
        byte = size & 0x7F
        size >>= 7
    out.append(byte)
    return bytes(out)


def _index(entries: list[tuple[bytes, int, int]], checksum: bytes) -> bytes:
    entries = sorted(entries)
    fanout, pos = [], 0
    for first in range(256):
        while pos < len(entries) and entries[pos][0][0] == first:
            pos += 1
        fanout.append(pos)
    small, large = [], []
    for _, _, offset in entries:
        if offset < 0x80000000:
            small.append(offset)
        else:
            small.append(0x80000000 | len(large))
            large.append(offset)
    out = b"".join([
        b"\xfftOc", struct.pack(">I", 2), struct.pack(">256I", *fanout),
        *(raw for raw, _, _ in entries),
        struct.pack(f">{len(entries)}I", *(crc for _, crc, _ in entries)),
        struct.pack(f">{len(small)}I", *small), struct.pack(f">{len(large)}Q", *large),
        checksum,
    ])
    return out + hashlib.sha1(out, usedforsecurity=False).digest()


def _write_file(path: Path, data: bytes) -> None:
    """Write ``data`` durably under a temporary name (as git names them), then rename."""
    tmp = path.with_name(f"tmp_pack_{secrets.token_hex(6)}")
    try:
        with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o444), "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
