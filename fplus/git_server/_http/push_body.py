"""A push's request body, held to the push limit before ``git receive-pack`` sees any of it.

The body is copied into a spooled temporary file (memory up to :data:`IN_MEMORY`, disk
beyond) and handed to http-backend only once it is whole and within the limit, so an
oversized push is refused with nothing written: no object reaches the repo, no ref moves.
A gzip-encoded body (git compresses small requests) is inflated here and counted inflated,
so a small compressed body cannot unpack past the limit either.
"""

from __future__ import annotations

import tempfile
import zlib
from typing import IO

from werkzeug.exceptions import BadRequest, RequestEntityTooLarge
from werkzeug.wsgi import get_content_length

DEFAULT_LIMIT = 100 * 1024 * 1024
"""The default push limit (``git-server serve --push-limit``)."""
IN_MEMORY = 1024 * 1024
CHUNK = 64 * 1024
_DRAIN = 64 * 1024 * 1024


class PushTooLarge(RequestEntityTooLarge):
    """A push over the limit (413); the message is the one the client shows."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"push refused: over the Git server's push limit of {limit} bytes "
                         "(git-server --push-limit); nothing was written")


def spool_push(environ: dict, limit: int) -> IO[bytes]:
    """Replace ``environ``'s body with a sized, plain copy of it, returned for the caller to
    close; :class:`PushTooLarge` if it is (or inflates to) more than ``limit`` bytes, 400 if
    its gzip is broken."""
    stream: IO[bytes] = environ["wsgi.input"]
    declared = get_content_length(environ)
    gzipped = environ.get("HTTP_CONTENT_ENCODING", "").lower() in ("gzip", "x-gzip")
    if declared is not None and declared > limit and not gzipped:
        _drain(stream, declared)
        raise PushTooLarge(limit)
    inflate = zlib.decompressobj(16 + zlib.MAX_WBITS) if gzipped else None
    spool = tempfile.SpooledTemporaryFile(max_size=IN_MEMORY)  # noqa: SIM115
    size = 0
    try:
        while chunk := stream.read(CHUNK):
            if inflate is not None:
                chunk = _inflated(inflate, chunk, limit - size + 1)
            size += len(chunk)
            if size > limit:
                _drain(stream, _DRAIN)
                raise PushTooLarge(limit)
            spool.write(chunk)
    except BaseException:
        spool.close()
        raise
    spool.seek(0)
    environ["wsgi.input"] = spool
    environ["CONTENT_LENGTH"] = str(size)
    for key in ("HTTP_CONTENT_ENCODING", "HTTP_TRANSFER_ENCODING"):
        environ.pop(key, None)
    return spool


def _inflated(inflate: zlib._Decompress, chunk: bytes, most: int) -> bytes:
    """``chunk`` inflated, at most ``most`` bytes of it (more would be over the limit)."""
    try:
        return inflate.decompress(chunk, most)
    except zlib.error as exc:
        raise BadRequest(f"the push body is not valid gzip: {exc}") from None


def _drain(stream: IO[bytes], most: int) -> None:
    """Read and drop up to ``most`` bytes, so the client reads the 413, not a reset."""
    most = min(most, _DRAIN)
    while most > 0 and (chunk := stream.read(min(CHUNK, most))):
        most -= len(chunk)
