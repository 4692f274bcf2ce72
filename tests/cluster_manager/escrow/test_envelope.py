"""Envelopes: a value opens only at its own place, under the key id it was wrapped with,
unaltered, and while the keyring still holds that key."""

from __future__ import annotations

import base64
from collections.abc import Callable
from dataclasses import replace

import pytest

from fplus.cluster_manager.escrow import Envelope, EnvelopeError, EscrowKeyError, keyring
from fplus.cluster_manager.escrow.envelope import place, rewrap, unwrap, wrap

VALUE = b"hunter2\x00\xff and more"
WHERE = place("c-1", "team-a", "db", "password")
RING = keyring.generate().with_new_key()  # two keys, the second current


def flip(text: str, index: int) -> str:
    raw = bytearray(base64.b64decode(text))
    raw[index] ^= 0x01
    return base64.b64encode(bytes(raw)).decode()


def test_round_trip_and_every_wrap_is_fresh() -> None:
    a, b = wrap(RING, VALUE, WHERE), wrap(RING, VALUE, WHERE)
    assert a.key_id == RING.current
    assert unwrap(RING, a, WHERE) == unwrap(RING, b, WHERE) == VALUE
    assert a.wrapped_key != b.wrapped_key and a.ciphertext != b.ciphertext
    # nonce (12) + value + tag (16); data key: nonce + 32 + tag
    assert len(base64.b64decode(a.ciphertext)) == 12 + len(VALUE) + 16
    assert len(base64.b64decode(a.wrapped_key)) == 12 + 32 + 16
    for field in (a.wrapped_key, a.ciphertext):
        assert VALUE not in base64.b64decode(field)
    assert unwrap(RING, wrap(RING, b"", WHERE), WHERE) == b""


@pytest.mark.parametrize("elsewhere", [
    place("c-2", "team-a", "db", "password"),
    place("c-1", "team-b", "db", "password"),
    place("c-1", "team-a", "db2", "password"),
    place("c-1", "team-a", "db", "user"),
    place("c-1", "team-a/db", "", "password"),
    b"",
])
def test_the_wrong_place_does_not_open(elsewhere: bytes) -> None:
    sealed = wrap(RING, VALUE, WHERE)
    with pytest.raises(EnvelopeError):
        unwrap(RING, sealed, elsewhere)


def test_a_ciphertext_moved_to_another_envelope_does_not_open() -> None:
    a = wrap(RING, VALUE, WHERE)
    b = wrap(RING, b"other", WHERE)
    with pytest.raises(EnvelopeError):
        unwrap(RING, replace(a, ciphertext=b.ciphertext), WHERE)


def test_a_relabelled_key_id_does_not_open() -> None:
    """The key id is bound into the wrap: two ids holding the same key bytes, so only that
    binding can tell them apart."""
    same = RING.keys[RING.current]
    twins = keyring.Keyring("k-a", {"k-a": same, "k-b": same})
    sealed = wrap(twins, VALUE, WHERE)
    assert unwrap(twins, sealed, WHERE) == VALUE
    with pytest.raises(EnvelopeError):
        unwrap(twins, replace(sealed, key_id="k-b"), WHERE)
    old = next(k for k in RING.keys if k != RING.current)
    with pytest.raises(EnvelopeError):  # another key of the ring
        unwrap(RING, replace(wrap(RING, VALUE, WHERE), key_id=old), WHERE)


@pytest.mark.parametrize(("field", "index"), [
    ("wrapped_key", 0), ("wrapped_key", 11), ("wrapped_key", 12), ("wrapped_key", 43),
    ("wrapped_key", -1), ("ciphertext", 0), ("ciphertext", 12), ("ciphertext", 20),
    ("ciphertext", -1),
])
def test_a_flipped_byte_does_not_open(field: str, index: int) -> None:
    sealed = wrap(RING, VALUE, WHERE)
    altered = replace(sealed, **{field: flip(getattr(sealed, field), index)})
    with pytest.raises(EnvelopeError):
        unwrap(RING, altered, WHERE)


@pytest.mark.parametrize("cut", [
    lambda s: s[:-4],
    lambda s: base64.b64encode(base64.b64decode(s)[:20]).decode(),
    lambda s: base64.b64encode(base64.b64decode(s)[:12]).decode(),
    lambda s: base64.b64encode(base64.b64decode(s)[:4]).decode(),
    lambda s: "",
], ids=["short-base64", "20-bytes", "nonce-only", "4-bytes", "empty"])
def test_a_truncated_field_does_not_open(cut: Callable[[str], str]) -> None:
    sealed = wrap(RING, VALUE, WHERE)
    for field in ("wrapped_key", "ciphertext"):
        with pytest.raises(EnvelopeError):
            unwrap(RING, replace(sealed, **{field: cut(getattr(sealed, field))}), WHERE)


def test_a_retired_key_is_named() -> None:
    sealed = wrap(RING, VALUE, WHERE)
    retired = RING.with_new_key().only_current()
    with pytest.raises(EscrowKeyError, match=sealed.key_id):
        unwrap(retired, sealed, WHERE)
    with pytest.raises(EscrowKeyError):
        rewrap(retired, sealed, WHERE)


def test_rewrap_moves_the_data_key_only() -> None:
    sealed = wrap(RING, VALUE, WHERE)
    newer = RING.with_new_key()
    moved = rewrap(newer, sealed, WHERE)
    assert moved.key_id == newer.current != sealed.key_id
    assert moved.ciphertext == sealed.ciphertext and moved.wrapped_key != sealed.wrapped_key
    assert unwrap(newer.only_current(), moved, WHERE) == VALUE
    with pytest.raises(EnvelopeError):
        rewrap(newer, sealed, place("c-1", "team-a", "db", "user"))


def test_envelope_fields_are_plain_strings() -> None:
    sealed = wrap(RING, VALUE, WHERE)
    assert isinstance(sealed, Envelope)
    assert all(isinstance(getattr(sealed, f), str) for f in ("key_id", "wrapped_key",
                                                             "ciphertext"))
