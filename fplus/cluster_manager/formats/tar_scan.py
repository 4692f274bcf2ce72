"""A tar archive's headers checked before :mod:`tarfile` reads them (pure functions).

``tarfile`` reads a GNU long name or link (``././@LongLink``, types ``L``/``K``) and a pax
header (``x``/``g``) whole into memory, however large its header declares it: a 556-byte
bzip2 archive declaring a 500 MB name costs a gigabyte. :func:`scan_tar` walks the raw
512-byte headers first, inflating gzip, bzip2 or xz a chunk at a time, and refuses such a
header whose declared size exceeds :data:`MAX_HEADER_BYTES` before reading any of it, more
than a given number of members or bytes of member data, sparse files and pax records that
change a member's size (what would make ``tarfile`` read the archive differently from this
walk). It stops where ``tarfile`` stops (the end-of-archive block, a header that is not
one), so everything ``tarfile`` then reads has been checked.
"""

from __future__ import annotations

import bz2
import lzma
import re
import zlib
from collections.abc import Callable, Iterator

MAX_HEADER_BYTES = 4096
"""The most one GNU long name or link, or one pax header, may declare (a path is ~100s)."""
MAX_EXTENSIONS = 4
"""The most long-name, long-link and pax headers in a row, before one member."""
BLOCK = 512
CHUNK = 64 * 1024
"""How much is inflated at a time."""
LONG = {b"L": "GNU long name", b"K": "GNU long link name"}
PAX = {b"x": "pax", b"g": "pax global", b"X": "pax (Solaris)"}
SPARSE = b"S"
NOT_SKIPPED = frozenset({b"1", b"2", b"3", b"4", b"5", b"6"})
"""Member types whose data ``tarfile`` does not skip (links, devices, directories, FIFOs)."""
OLD_FILE = b"\0"
"""The old regular-file type, which ``tarfile`` reads as a directory when its name ends with
``/``."""
HIGH = bytes(range(128, 256))
PAX_RECORD = re.compile(rb"(\d+) ([^=]+)=")


class TarRefused(ValueError):
    """Not an archive we read; the message says why. ``limit`` names the limit exceeded
    (``members``, ``bytes``, ``header``) or is empty."""

    def __init__(self, message: str, limit: str = "") -> None:
        super().__init__(message)
        self.limit = limit


def scan_tar(data: bytes, max_members: int, max_bytes: int) -> None:
    """Check the headers of the (gzip, bzip2, xz or plain) tar archive ``data``: at most
    ``max_members`` members, ``max_bytes`` of member data, no long name, link or pax header
    over :data:`MAX_HEADER_BYTES`; :class:`TarRefused` otherwise."""
    stream = _Stream(_inflated(data))
    members = extensions = total = 0
    first = True
    while True:
        header = stream.read(BLOCK)
        if len(header) < BLOCK or header.count(0) == BLOCK:
            return
        size = _number(header[124:136])
        if not _checksum_ok(header) or size is None:
            if first:
                raise TarRefused("not a tar archive (gzip, bzip2, xz or plain)")
            return  # tarfile ends the archive here too
        first = False
        kind = header[156:157]
        if size < 0:
            raise TarRefused("a member declares a negative size")
        if kind in LONG or kind in PAX:
            extensions += 1
            _extension(stream, kind, size, extensions)
            continue
        extensions = 0
        if kind == SPARSE:
            raise TarRefused("a sparse file is in the archive: a chart holds regular files "
                             "only")
        members += 1
        if members > max_members:
            raise TarRefused(f"the archive holds more than {max_members} files and "
                             "directories", "members")
        if kind not in NOT_SKIPPED and not _old_directory(kind, header):
            total += size
            if total > max_bytes:
                raise TarRefused(f"the archive's files exceed {max_bytes} bytes", "bytes")
            stream.skip(_padded(size))


def _extension(stream: _Stream, kind: bytes, size: int, in_a_row: int) -> None:
    """Check one long-name, long-link or pax header (its payload read only when small)."""
    what = LONG.get(kind) or PAX[kind]
    if in_a_row > MAX_EXTENSIONS:
        raise TarRefused(f"more than {MAX_EXTENSIONS} long name and pax headers before one "
                         "member")
    if size > MAX_HEADER_BYTES:
        raise TarRefused(f"a {what} header declares {size} bytes, more than "
                         f"{MAX_HEADER_BYTES}", "header")
    payload = stream.read(_padded(size))[:size]
    if kind in PAX:
        for keyword in _pax_keywords(payload):
            if keyword == b"size" or keyword.startswith(b"GNU.sparse"):
                raise TarRefused(f"a {what} header sets {keyword.decode(errors='replace')}"
                                 ": a chart's members are plain files")


def _pax_keywords(payload: bytes) -> Iterator[bytes]:
    """The keywords of a pax header's ``<length> <keyword>=<value>\\n`` records."""
    pos = 0
    while pos < len(payload):
        match = PAX_RECORD.match(payload, pos)
        if match is None or int(match[1]) <= 0:
            return
        yield match[2]
        pos += int(match[1])


def _old_directory(kind: bytes, header: bytes) -> bool:
    return kind == OLD_FILE and header[:100].split(b"\0", 1)[0].endswith(b"/")


def _padded(size: int) -> int:
    return -(-size // BLOCK) * BLOCK


def _number(field: bytes) -> int | None:
    """A numeric header field as ``tarfile`` reads it (octal, or GNU base-256)."""
    if field[:1] in (b"\x80", b"\xff"):
        value = int.from_bytes(field[1:], "big")
        return value - 256 ** (len(field) - 1) if field[:1] == b"\xff" else value
    text = field.split(b"\0", 1)[0].strip()
    try:
        return int(text or b"0", 8)
    except ValueError:
        return None


def _checksum_ok(header: bytes) -> bool:
    """Whether the header's checksum is right (unsigned or signed, as ``tarfile`` takes)."""
    stored = _number(header[148:156])
    blanked = header[:148] + b" " * 8 + header[156:]
    unsigned = sum(blanked)
    high = len(blanked) - len(blanked.translate(None, HIGH))
    return stored in (unsigned, unsigned - 256 * high)


def _inflated(data: bytes) -> Iterator[bytes]:
    """``data`` decompressed a chunk at a time (as it is, for a plain tar)."""
    try:
        if data[:2] == b"\x1f\x8b":
            yield from _zlib_chunks(data)
        elif data[:3] == b"BZh":
            yield from _chunks(data, bz2.BZ2Decompressor)
        elif data[:6] == b"\xfd7zXZ\x00":
            yield from _chunks(data, lzma.LZMADecompressor)
        else:
            for start in range(0, len(data), CHUNK):
                yield data[start:start + CHUNK]
    except (zlib.error, lzma.LZMAError, OSError, EOFError) as exc:
        raise TarRefused(f"the archive is damaged: {exc}") from None


def _zlib_chunks(data: bytes) -> Iterator[bytes]:
    """Gzip members one after another (trailing zero padding ignored, as gzip does)."""
    rest = data
    while rest.strip(b"\0"):
        inflater = zlib.decompressobj(wbits=31)
        while not inflater.eof:
            out = inflater.decompress(rest, CHUNK)
            rest = inflater.unconsumed_tail
            if out:
                yield out
            elif not rest:
                return  # truncated: tarfile says so
        rest = inflater.unused_data


def _chunks(data: bytes, new: Callable[[], bz2.BZ2Decompressor | lzma.LZMADecompressor]
            ) -> Iterator[bytes]:
    """Bzip2 or xz streams one after another."""
    rest = data
    while rest.strip(b"\0"):
        inflater = new()
        pending = rest
        while not inflater.eof:
            out = inflater.decompress(pending, CHUNK)
            pending = b""
            if out:
                yield out
            elif inflater.needs_input:
                return  # truncated: tarfile says so
        rest = inflater.unused_data


class _Stream:
    """Read and skip through chunks, holding no more than one chunk and one request."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._chunks = chunks
        self._held = bytearray()

    def _more(self) -> bool:
        chunk = next(self._chunks, None)
        if chunk is None:
            return False
        self._held += chunk
        return True

    def read(self, size: int) -> bytes:
        while len(self._held) < size and self._more():
            pass
        taken = bytes(self._held[:size])
        del self._held[:size]
        return taken

    def skip(self, size: int) -> None:
        while size > 0 and (self._held or self._more()):
            step = min(size, len(self._held))
            del self._held[:step]
            size -= step
