"""Write a batch of new objects as one git pack (+ version-2 index) instead of loose files.

One commit's objects (blobs, trees, the commit) become two files, written under temporary
names (:func:`stage_records`), fsynced (or made durable later by a file-system sync shared with
other writes) and renamed into ``objects/pack`` (``.pack`` first, ``.idx`` last: readers
discover packs by their index). Creating files is the dominant cost of a loose-object commit,
so this is what lets a batch of changes cost about the same as a single one.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
import struct
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from fplus.git.bare.refs import fsync_dir

RawObject = tuple[int, bytes]  # (git object type: 1 commit, 2 tree, 3 blob, 4 tag; content)
PackRecord = tuple[bytes, int]
"""One object as a pack stores it (type and size header, then the zlib stream) and the
CRC-32 of those bytes, as the index keeps it: a whole object's record can move to another
pack unchanged."""
_WHOLE_TYPES = frozenset((1, 2, 3, 4))  # deltas (6, 7) name their base by position or id


def git_hash(otype: int, data: bytes) -> bytes:
    """The raw 20-byte object id of ``data`` stored as ``otype``."""
    kind = {1: b"commit", 2: b"tree", 3: b"blob", 4: b"tag"}[otype]
    return hashlib.sha1(b"%s %d\x00" % (kind, len(data)) + data, usedforsecurity=False).digest()


@dataclass(frozen=True)
class StagedPack:
    """A pack and its index under temporary names in ``pack_dir``, not yet seen by readers."""

    pack_dir: Path
    name: str
    pack: Path
    idx: Path

    def publish(self, fsync: bool = False) -> str:
        """Rename both into place, the pack first; return the pack's base name. ``fsync``:
        the renames on disk before this returns (the directory synced)."""
        os.replace(self.pack, self.pack_dir / f"{self.name}.pack")
        os.replace(self.idx, self.pack_dir / f"{self.name}.idx")
        if fsync:
            fsync_dir(self.pack_dir)
        return self.name

    def discard(self) -> None:
        """Remove the files if they were not published."""
        for path in (self.pack, self.idx):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)


def write_pack(pack_dir: Path, objects: Mapping[bytes, RawObject]) -> str:
    """Store ``objects`` (raw id → object) as one pack in ``pack_dir``; return its base name."""
    return stage_pack(pack_dir, objects).publish(fsync=True)


def stage_pack(pack_dir: Path, objects: Mapping[bytes, RawObject], *,
               fsync: bool = True) -> StagedPack:
    """``objects`` as one pack under temporary names (:func:`stage_records`)."""
    return stage_records(pack_dir, {raw: pack_record(otype, data)
                                    for raw, (otype, data) in objects.items()}, fsync=fsync)


def pack_record(otype: int, data: bytes) -> PackRecord:
    """``data`` stored as ``otype``, deflated (fast level), as one pack record."""
    record = _header(otype, len(data)) + zlib.compress(data, 1)
    return record, zlib.crc32(record)


def write_records(pack_dir: Path, records: Mapping[bytes, PackRecord]) -> str:
    """Store already packed ``records`` (raw id → record) as one pack; return its base name."""
    return stage_records(pack_dir, records).publish(fsync=True)


def stage_records(pack_dir: Path, records: Mapping[bytes, PackRecord], *,
                  fsync: bool = True) -> StagedPack:
    """Write ``records`` as one pack and its index under temporary names (as git names
    them, so ``git gc`` removes any left behind); ``fsync``: each on disk before this
    returns, else the caller makes them durable before :meth:`StagedPack.publish`."""
    parts = [b"PACK" + struct.pack(">II", 2, len(records))]
    entries: list[tuple[bytes, int, int]] = []  # raw id, crc32, offset
    offset = len(parts[0])
    for raw, (record, crc) in records.items():
        entries.append((raw, crc, offset))
        parts.append(record)
        offset += len(record)
    body = b"".join(parts)
    checksum = hashlib.sha1(body, usedforsecurity=False).digest()
    pack = _write_temp(pack_dir, "tmp_pack_", body + checksum, fsync)
    try:
        idx = _write_temp(pack_dir, "tmp_idx_", _index(entries, checksum), fsync)
    except BaseException:
        os.unlink(pack)
        raise
    return StagedPack(pack_dir, f"pack-{checksum.hex()}", pack, idx)


def whole_records(idx_path: Path) -> dict[bytes, PackRecord] | None:
    """Every object of the pack indexed by ``idx_path`` as its stored record, to copy into
    another pack without inflating and deflating it again; None when the pack holds a delta
    (a record that cannot move alone) or is not one we can read this way."""
    data = idx_path.read_bytes()
    pack = idx_path.with_suffix(".pack").read_bytes()
    if data[:8] != b"\xfftOc\x00\x00\x00\x02" or pack[:8] != b"PACK\x00\x00\x00\x02":
        return None
    count = struct.unpack_from(">I", data, 8 + 255 * 4)[0]
    ids_at = 8 + 256 * 4
    crcs_at = ids_at + 20 * count
    small_at = crcs_at + 4 * count
    small = struct.unpack_from(f">{count}I", data, small_at)
    large_at = small_at + 4 * count
    offsets = [struct.unpack_from(">Q", data, large_at + 8 * (o & 0x7FFFFFFF))[0]
               if o & 0x80000000 else o for o in small]
    crcs = struct.unpack_from(f">{count}I", data, crcs_at)
    order = sorted(range(count), key=offsets.__getitem__)
    ends = [offsets[i] for i in order[1:]] + [len(pack) - 20]
    found: dict[bytes, PackRecord] = {}
    for i, end in zip(order, ends, strict=True):
        record = pack[offsets[i]:end]
        if not record or (record[0] >> 4) & 7 not in _WHOLE_TYPES:
            return None
        found[data[ids_at + 20 * i:ids_at + 20 * (i + 1)]] = (record, crcs[i])
    return found


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
    small: list[int] = []
    large: list[int] = []
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


def _write_temp(pack_dir: Path, prefix: str, data: bytes, fsync: bool) -> Path:
    """``data`` in a new file named ``prefix`` and random characters (fsynced if asked)."""
    path = pack_dir / f"{prefix}{secrets.token_hex(6)}"
    try:
        with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o444), "wb") as f:
            f.write(data)
            if fsync:
                f.flush()
                os.fsync(f.fileno())
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        raise
    return path
