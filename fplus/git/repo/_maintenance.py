"""Keep the number of packs bounded: merge many small packs into one, dropping no object.

Every commit adds a small pack, and lookups get slower with each pack. Once there are enough
small ones, the smallest are rolled up so the remaining sizes form a geometric progression
(factor 2, as ``git repack --geometric=2``): all their objects (reachable or not: a writer
in another process may not have moved its ref yet) are copied into one new pack, which is
in place before any old one goes. An object is thus rewritten O(log n) times, not every
time a handful of new packs arrive.
Readers that miss an object in a vanished pack rescan the directory, as git and libgit2 do.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import pygit2

from fplus.git.bare import break_if_stale
from fplus.git.repo._pack import (
    PackRecord,
    pack_ids,
    pack_record,
    whole_records,
    write_records,
)

SMALL_PACK_BYTES = 1 << 20
_LOCK = "merge-packs.lock"
FACTOR = 2


def geometric_rollup(sizes: list[int]) -> int:
    """How many of ``sizes`` (ascending) to merge so the rest, and the merged pack, grow by
    at least ``FACTOR`` from one pack to the next (git's ``--geometric`` split)."""
    split = 0
    for i in range(len(sizes) - 1, 0, -1):
        if sizes[i] < FACTOR * sizes[i - 1]:
            split = i
            break
    if split == 0:
        return 0
    total = sum(sizes[:split])
    while split < len(sizes) and sizes[split] < FACTOR * total:
        total += sizes[split]
        split += 1
    return split


def small_packs(pack_dir: Path) -> list[Path]:
    """Index files of the packs below ``SMALL_PACK_BYTES`` that may be merged."""
    found = []
    for idx in pack_dir.glob("pack-*.idx"):
        if any(idx.with_suffix(s).exists() for s in (".keep", ".promisor")):
            continue
        with contextlib.suppress(FileNotFoundError):
            if idx.with_suffix(".pack").stat().st_size < SMALL_PACK_BYTES:
                found.append(idx)
    return found


def _size(idx: Path) -> int:
    try:
        return idx.with_suffix(".pack").stat().st_size
    except FileNotFoundError:
        return 0


def _records(repo: pygit2.Repository, idx: Path) -> dict[bytes, PackRecord]:
    """The pack's objects as records: copied as stored when it holds no delta (ours never
    do), else read whole and packed again."""
    found = whole_records(idx)
    if found is not None:
        return found
    return {raw: pack_record(int(otype), data) for raw in pack_ids(idx)
            for otype, data in [repo.odb.read(pygit2.Oid(raw=raw))]}


def merge_small_packs(repo: pygit2.Repository, min_count: int = 32) -> int:
    """Merge the small packs if there are at least ``min_count``; return how many were merged."""
    pack_dir = Path(repo.path) / "objects" / "pack"
    if (pack_dir / "multi-pack-index").exists():
        return 0  # leave repos maintained by git's own tooling alone
    found = small_packs(pack_dir)
    if len(found) < max(min_count, 2):
        return 0
    sized = sorted((_size(idx), str(idx)) for idx in found)
    candidates = [Path(idx) for _, idx in sized[:geometric_rollup([s for s, _ in sized])]]
    if len(candidates) < 2:
        return 0
    lock = pack_dir / _LOCK
    try:
        os.close(os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
    except FileExistsError:
        break_if_stale(lock, 120.0)
        return 0  # someone else is merging
    try:
        records: dict[bytes, PackRecord] = {}
        for idx in candidates:
            for raw, record in _records(repo, idx).items():
                records.setdefault(raw, record)
        write_records(pack_dir, records)
        for idx in candidates:
            for suffix in (".idx", ".pack", ".rev", ".bitmap"):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(idx.with_suffix(suffix))
        return len(candidates)
    except (pygit2.GitError, KeyError, OSError, ValueError):
        return 0  # a concurrent merge or gc removed a pack under us: try again later
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(lock)
