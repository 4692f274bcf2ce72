"""notify/v2 updates as JSON bytes; a response many subscribers share is encoded once.

A write watched by a hundred subscribers gives a hundred updates that differ only in their
subscription's uuid: the entry's response in them is one :class:`Shared` object (one per
change, see :func:`shared`), encoded and digested once and spliced into every update.
"""

from __future__ import annotations

import hashlib
import threading
from json.encoder import encode_basestring_ascii
from typing import Any

from fplus.serving.notify.wire import dumps

from ..common.events import ConfigChanged

SHARED_CHANGES = 64
SHARED_BYTES = 4 * 1024 * 1024
"""The most recent changes whose responses are kept for sharing, and their most bytes (the
latest change is kept whatever its size): what sessions are fanning out now. A session
behind them encodes its own."""


class Shared:
    """A response several updates hold, encoded and digested once."""

    __slots__ = ("digest", "text", "value")

    def __init__(self, value: Any) -> None:
        self.value = value
        self.text = dumps(value).encode("ascii")
        """The value as :func:`dumps` gives it (ASCII)."""
        self.digest = hashlib.blake2b(self.text, digest_size=16).digest()


_lock = threading.Lock()
_by_change: dict[tuple[int, bool], tuple[ConfigChanged, Shared]] = {}
_kept_bytes = 0


def shared(change: ConfigChanged, head: bool = False) -> Shared:
    """The response to a GET (``head``: HEAD) of the entry ``change`` wrote, the same object
    for every subscription that asks while the change is recent; raises what encoding the
    value raises."""
    global _kept_bytes
    key = (id(change), head)
    with _lock:
        found = _by_change.get(key)
        if found is not None and found[0] is change:
            return found[1]
    if change.etag is None:
        response: dict[str, Any] = {"status": 404}
    else:
        response = {"status": 200, "headers": {"etag": change.etag}}
        if not head:
            response["body"] = change.value
    made = Shared(response)
    with _lock:
        while _by_change and (len(_by_change) >= SHARED_CHANGES
                              or _kept_bytes + len(made.text) > SHARED_BYTES):
            _kept_bytes -= len(_by_change.pop(next(iter(_by_change)))[1].text)
        _by_change[key] = (change, made)  # holding the change keeps its id unique
        _kept_bytes += len(made.text)
    return made


def plain(update: dict[str, Any]) -> dict[str, Any]:
    """``update`` with its shared parts as plain values."""
    return {k: v.value if isinstance(v, Shared) else v for k, v in update.items()}


_KEYS: dict[str, bytes] = {}


def _small(value: Any) -> bytes:
    """``dumps(value)`` as bytes, without building an encoder for a string or an integer
    (a subscription's uuid, a status): what ``dumps`` writes for them."""
    if type(value) is str:
        return encode_basestring_ascii(value).encode("ascii")
    if type(value) is int:
        return b"%d" % value
    return dumps(value).encode("ascii")


def encode(update: dict[str, Any]) -> tuple[bytes, bytes]:
    """``update`` as :func:`dumps` would give it (ASCII bytes), :class:`Shared` parts
    spliced in, and a digest of it (equal updates, equal digests); raises what encoding
    a part raises."""
    parts: list[bytes] = []
    digest = hashlib.blake2b(digest_size=16)
    for key in sorted(update):
        name = _KEYS.get(key)
        if name is None:
            name = _KEYS.setdefault(key, dumps(key).encode("ascii") + b":")
        value = update[key]
        parts += (b"," if parts else b"{", name)
        if isinstance(value, Shared):
            parts.append(value.text)
            digest.update(name + value.digest)
        else:
            text = _small(value)
            parts.append(text)
            digest.update(name + text)
    parts.append(b"}")
    return b"".join(parts), digest.digest()
