"""The saved session: where it lives, what it holds (never a password), env overrides."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from fplus.cli.profile import Profile, ProfileError, config_path, load, save


@pytest.mark.parametrize(("url", "given", "expected"), [
    ("http://127.0.0.1:8700", None, "http://127.0.0.1:8701"),
    ("https://cm.factory.example/", None, "https://cm.factory.example:8701"),
    ("http://[::1]:8700", None, "http://[::1]:8701"),
    ("http://127.0.0.1:8700", "https://cs.example/", "https://cs.example"),
])
def test_config_store_url(url: str, given: str | None, expected: str) -> None:
    assert Profile(url=url, config_store=given).config_store_url == expected


def test_config_path_follows_fplus_config_then_xdg(tmp_path: Path) -> None:
    assert config_path({"FPLUS_CONFIG": str(tmp_path / "c.json")}) == tmp_path / "c.json"
    assert config_path({"XDG_CONFIG_HOME": str(tmp_path)}) == tmp_path / "fplus/config.json"


def test_save_writes_0600_without_the_password(tmp_path: Path) -> None:
    env = {"XDG_CONFIG_HOME": str(tmp_path / "cfg")}
    path = save(Profile(url="http://h:8700", user="admin", token="tok", password="pw"), env)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert json.loads(path.read_text()) == {"url": "http://h:8700", "user": "admin",
                                            "token": "tok"}
    assert load(env) == Profile(url="http://h:8700", user="admin", token="tok")


def test_environment_overrides_the_saved_session(tmp_path: Path) -> None:
    env = {"XDG_CONFIG_HOME": str(tmp_path)}
    save(Profile(url="http://saved:8700", token="saved-token"), env)
    env |= {"FPLUS_URL": "https://env:8700", "FPLUS_TOKEN": "env-token",
            "FPLUS_CA_FILE": "/ca.pem"}
    found = load(env)
    assert (found.url, found.token, found.ca_file) == ("https://env:8700", "env-token", "/ca.pem")
    assert found.authorization() == "Bearer env-token"
    basic = load(env | {"FPLUS_PASSWORD": "pw"})
    assert basic.authorization() == "Basic YWRtaW46cHc="  # admin:pw, Basic wins over a token


def test_an_unreadable_profile_says_to_log_in_again(tmp_path: Path) -> None:
    path = tmp_path / "fplus" / "config.json"
    path.parent.mkdir()
    path.write_text("{not json")
    with pytest.raises(ProfileError, match="run `fplus login` again"):
        load({"XDG_CONFIG_HOME": str(tmp_path)})


def test_no_credentials_no_header() -> None:
    assert Profile().authorization() is None
