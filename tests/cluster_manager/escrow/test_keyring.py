"""The escrow key file: what ``load`` refuses (each with one line naming the file), what
``save`` writes, and rotation keeping values readable."""

from __future__ import annotations

import base64
import json
import os
import stat
from pathlib import Path

import pytest

from fplus.cluster_manager.escrow import envelope, keyring
from fplus.cluster_manager.escrow.keyring import EscrowKeyError

KEY = base64.b64encode(bytes(range(32))).decode()


def write(path: Path, text: str, mode: int = 0o600) -> Path:
    path.write_text(text)
    path.chmod(mode)
    return path


def doc(**fields: object) -> str:
    return json.dumps({"version": 1, "current": "k1", "keys": {"k1": KEY}} | fields)


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o660, 0o606, 0o610, 0o601])
def test_a_file_others_can_read_or_write_is_refused(tmp_path: Path, mode: int) -> None:
    path = write(tmp_path / "escrow.key", doc(), mode)
    with pytest.raises(EscrowKeyError) as caught:
        keyring.load(path)
    message = str(caught.value)
    assert "\n" not in message and str(path) in message
    assert f"{mode:04o}" in message and f"chmod 600 {path}" in message


@pytest.mark.parametrize("mode", [0o600, 0o400, 0o700])
def test_owner_only_modes_load(tmp_path: Path, mode: int) -> None:
    ring = keyring.load(write(tmp_path / "escrow.key", doc(), mode))
    assert ring.current == "k1" and ring.keys == {"k1": bytes(range(32))}


@pytest.mark.parametrize(("text", "words"), [
    ("not json at all", "not an escrow key file"),
    ("", "not an escrow key file"),
    ("[1, 2]", "not an escrow key file"),
    ('{"version": 1, "keys": {}}', "not an escrow key file"),
    ('{"version": 1, "current": "k1"}', "not an escrow key file"),
    (doc(keys={"k1": "***"}), "not an escrow key file"),
    (doc(keys={"k1": 7}), "not an escrow key file"),
    (doc(keys=["k1"]), "not an escrow key file"),
    (doc(keys={"k1": base64.b64encode(bytes(16)).decode()}), "'k1' is not 256 bits"),
    (doc(keys={"k1": base64.b64encode(bytes(33)).decode()}), "'k1' is not 256 bits"),
    (doc(keys={"k1": ""}), "'k1' is not 256 bits"),
    (doc(keys={"k1": KEY, "k0": base64.b64encode(bytes(31)).decode()}), "'k0' is not 256"),
    (doc(current="k2"), "current key 'k2' is not among its keys"),
    (doc(keys={}), "current key 'k1' is not among its keys"),
    (doc(current=None), "is not among its keys"),
    pytest.param(doc(current=["k1"]), "", id="current-a-list"),
])
def test_unusable_files_are_refused_with_one_line(tmp_path: Path, text: str, words: str) -> None:
    path = write(tmp_path / "escrow.key", text)
    with pytest.raises(EscrowKeyError) as caught:
        keyring.load(path)
    message = str(caught.value)
    assert "\n" not in message and str(path) in message and words in message


@pytest.mark.parametrize("make", [lambda p: None, lambda p: p.mkdir()])
def test_a_missing_file_or_a_directory_is_one_line(tmp_path: Path, make: object) -> None:
    path = tmp_path / "escrow.key"
    make(path)  # type: ignore[operator]
    with pytest.raises(EscrowKeyError) as caught:
        keyring.load(path)
    assert "\n" not in str(caught.value) and str(path) in str(caught.value)


def test_save_writes_owner_only_and_round_trips(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "escrow.key"
    old = os.umask(0)
    try:
        keyring.save(path, keyring.generate(), replace=False)
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    written = json.loads(path.read_text())
    assert written["version"] == 1 and list(written["keys"]) == [written["current"]]
    ring = keyring.load(path)
    assert len(ring.keys[ring.current]) == 32
    assert list(tmp_path.joinpath("sub").iterdir()) == [path]  # no temp file left


def test_init_refuses_to_overwrite(tmp_path: Path) -> None:
    path = tmp_path / "escrow.key"
    keyring.save(path, keyring.generate(), replace=False)
    before = path.read_bytes()
    with pytest.raises(EscrowKeyError, match="exists"):
        keyring.save(path, keyring.generate(), replace=False)
    assert path.read_bytes() == before
    keyring.save(path, keyring.generate(), replace=True)
    assert path.read_bytes() != before


def test_keys_are_fresh_and_repr_hides_them() -> None:
    a, b = keyring.generate(), keyring.generate()
    assert a.current != b.current and a.keys[a.current] != b.keys[b.current]
    assert base64.b64encode(a.keys[a.current]).decode() not in repr(a)
    assert a.keys[a.current].hex() not in repr(a)


def test_rotation_keeps_values_decryptable(tmp_path: Path) -> None:
    path = tmp_path / "escrow.key"
    first = keyring.generate()
    keyring.save(path, first, replace=False)
    where = envelope.place("c", "ns", "name", "key")
    sealed = envelope.wrap(keyring.load(path), b"the value", where)
    assert sealed.key_id == first.current

    both = keyring.load(path).with_new_key()
    assert set(both.keys) == {first.current, both.current} and both.current != first.current
    keyring.save(path, both, replace=True)
    assert envelope.unwrap(keyring.load(path), sealed, where) == b"the value"  # not re-wrapped
    moved = envelope.rewrap(keyring.load(path), sealed, where)
    assert moved.key_id == both.current and moved.ciphertext == sealed.ciphertext
    assert moved.wrapped_key != sealed.wrapped_key

    keyring.save(path, both.only_current(), replace=True)
    final = keyring.load(path)
    assert set(final.keys) == {both.current}
    assert envelope.unwrap(final, moved, where) == b"the value"
    with pytest.raises(EscrowKeyError, match=first.current):
        envelope.unwrap(final, sealed, where)  # the old wrap needs the retired key
