"""``FPLUS_ARGON2_PROFILE``: the argon2id parameters new password hashes are made with."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from argon2 import extract_parameters, profiles

from fplus.config_store._domain.core import credentials
from harness.servers import run_command


@pytest.fixture
def fresh_hasher() -> Iterator[None]:
    """The hasher chosen again from the environment, before and after the test."""
    credentials.password_hasher.cache_clear()
    yield
    credentials.password_hasher.cache_clear()


def test_the_default_is_rfc_9106_low_memory(fresh_hasher: None,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FPLUS_ARGON2_PROFILE", raising=False)
    stored = credentials.password_hasher().hash("a password")
    assert extract_parameters(stored) == profiles.RFC_9106_LOW_MEMORY
    assert stored.startswith("$argon2id$v=19$m=65536,t=3,p=4$")


def test_a_hash_of_any_profile_verifies_under_another(fresh_hasher: None,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FPLUS_ARGON2_PROFILE", "CHEAPEST")
    cheap = credentials.password_hasher().hash("a password")
    assert extract_parameters(cheap) == profiles.CHEAPEST
    credentials.password_hasher.cache_clear()
    monkeypatch.setenv("FPLUS_ARGON2_PROFILE", "RFC_9106_LOW_MEMORY")
    assert credentials.verify_password(cheap, "a password")
    assert not credentials.verify_password(cheap, "another")


def test_an_unknown_profile_is_one_line_and_nothing_is_served(tmp_path: Path) -> None:
    data = tmp_path / "data"
    env = {"FPLUS_ARGON2_PROFILE": "fast", "FPLUS_ADMIN_PASSWORD": "an-admin-password"}
    done = run_command("fplus.config_store.cli", "serve", "--data-dir", str(data),
                       "--port", "0", env=env)
    assert done.returncode != 0 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.strip() == (
        "config-store: FPLUS_ARGON2_PROFILE='fast' is none of "
        "RFC_9106_LOW_MEMORY, RFC_9106_HIGH_MEMORY, CHEAPEST")
    assert not (data / "config-store.db").exists()
