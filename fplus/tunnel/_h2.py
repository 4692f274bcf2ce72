"""The ``h2`` connection a :class:`~fplus.tunnel.mux.Mux` drives, configured for a tunnel.

Both ends are ours and authenticated, so what ``h2`` would spend CPU or memory on for an
unknown peer is left out: header fields are neither checked nor normalised (``fplus.tunnel.
wire`` builds them), header blocks are not Huffman coded, and each setting's values are kept
in a list where ``h2`` keeps a deque (a deque costs over 600 bytes holding one value; the
sixteen of a connection were a sixth of an idle tunnel's memory).
"""

from __future__ import annotations

from typing import Any, cast

from h2.config import H2Configuration
from h2.connection import H2Connection
from h2.settings import SettingCodes, Settings
from hpack import Encoder

STREAM_WINDOW = 256 * 1024
"""Bytes a peer may send on one stream before its reader takes them."""
CONNECTION_WINDOW = 4 * 1024 * 1024
"""Bytes a peer may send on all streams before their readers take them."""
MAX_FRAME = 64 * 1024
"""The largest frame either side receives."""
MAX_HEADER_LIST = 64 * 1024
"""The largest request or response head either side receives."""


def connection(client: bool, max_streams: int) -> H2Connection:
    """A new connection (not yet initiated) with the tunnel's settings."""
    conn = H2Connection(H2Configuration(
        client_side=client, header_encoding="utf-8",
        # checking each header field on the way out and in again cost a sixth of a request
        validate_outbound_headers=False, normalize_outbound_headers=False,
        validate_inbound_headers=False, normalize_inbound_headers=False))
    conn.local_settings = _CompactSettings(client=client, initial_values={
        SettingCodes.INITIAL_WINDOW_SIZE: STREAM_WINDOW,
        SettingCodes.MAX_FRAME_SIZE: MAX_FRAME,
        SettingCodes.MAX_CONCURRENT_STREAMS: max_streams,
        SettingCodes.MAX_HEADER_LIST_SIZE: MAX_HEADER_LIST})
    conn.remote_settings = _CompactSettings(client=not client)  # h2's defaults, as its own
    conn.max_inbound_frame_size = MAX_FRAME
    conn.encoder = _PlainEncoder()
    return conn


class _PlainEncoder(Encoder):
    """HPACK without Huffman coding: a header block somewhat longer, coded in about a quarter
    less CPU when a value is new (an API server's ``Audit-Id`` always is); the peer decodes
    either, and a tunnel runs out of CPU long before it runs out of bytes."""

    def encode(self, headers: Any, huffman: bool = False) -> bytes:
        return super().encode(headers, huffman=False)


class _Values(list[int]):
    """One setting's values, the one in force first and those awaiting acknowledgement
    after it (what ``h2`` keeps in a deque, and takes from with ``popleft``)."""

    __slots__ = ()

    def popleft(self) -> int:
        return self.pop(0)


class _CompactSettings(Settings):
    """``h2``'s settings, each setting's values in a :class:`_Values`."""

    def __init__(self, client: bool = True,
                 initial_values: dict[SettingCodes, int] | None = None) -> None:
        super().__init__(client, initial_values)
        self._settings = {k: cast(Any, _Values(v)) for k, v in self._settings.items()}

    def __setitem__(self, key: SettingCodes | int, value: int) -> None:
        super().__setitem__(key, value)  # a deque for a setting not yet known
        self._settings[key] = cast(Any, _Values(self._settings[key]))
