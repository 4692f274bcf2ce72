"""Where ``fplus`` keeps its login: the server URLs and a Config Store token, never a password.

The file is ``$FPLUS_CONFIG`` or ``$XDG_CONFIG_HOME/fplus/config.json`` (``~/.config/…``),
mode 0600 in a 0700 directory. Environment variables override it: ``FPLUS_URL`` (the Cluster
Manager), ``CONFIG_STORE_URL``, ``FPLUS_TOKEN``, ``FPLUS_USER``/``FPLUS_PASSWORD`` (HTTP Basic
instead of a token), ``FPLUS_CA_FILE``.
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

DEFAULT_URL = "http://127.0.0.1:8700"
CONFIG_STORE_PORT = 8701


@dataclass(frozen=True)
class Profile:
    """The servers and credentials one ``fplus`` invocation uses."""

    url: str = DEFAULT_URL
    """The Cluster Manager's base URL."""
    config_store: str | None = None
    user: str | None = None
    token: str | None = None
    password: str | None = None
    """Only from ``FPLUS_PASSWORD``; never saved."""
    ca_file: str | None = None
    expires: str | None = None
    """When the saved token ends, as the Config Store said at login (RFC 3339; None:
    unknown, as for ``FPLUS_TOKEN``)."""

    @property
    def config_store_url(self) -> str:
        """The Config Store: as given, else the Cluster Manager's host on port 8701."""
        if self.config_store:
            return self.config_store.rstrip("/")
        parts = urlsplit(self.url)
        host = parts.hostname or "127.0.0.1"
        netloc = f"[{host}]" if ":" in host else host
        return urlunsplit((parts.scheme, f"{netloc}:{CONFIG_STORE_PORT}", "", "", ""))

    def authorization(self) -> str | None:
        """The ``Authorization`` header value, if there are credentials."""
        if self.user and self.password:
            pair = f"{self.user}:{self.password}".encode()
            return "Basic " + base64.b64encode(pair).decode()
        if self.token:
            return f"Bearer {self.token}"
        return None


def config_path(env: Mapping[str, str] = os.environ) -> Path:
    """The profile file's path."""
    if env.get("FPLUS_CONFIG"):
        return Path(env["FPLUS_CONFIG"])
    base = env.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "fplus" / "config.json"


def load(env: Mapping[str, str] = os.environ) -> Profile:
    """The saved profile with the environment's overrides applied."""
    path = config_path(env)
    saved: dict[str, str] = {}
    if path.is_file():
        try:
            saved = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ProfileError(f"{path} is unreadable ({exc}): run `fplus login` again") from None
    fields = {k: v for k, v in saved.items() if k in Profile.__dataclass_fields__
              and k != "password" and isinstance(v, str)}
    profile = Profile(**fields)
    overrides = {"url": env.get("FPLUS_URL"), "config_store": env.get("CONFIG_STORE_URL"),
                 "token": env.get("FPLUS_TOKEN"), "ca_file": env.get("FPLUS_CA_FILE")}
    if env.get("FPLUS_PASSWORD"):
        overrides |= {"user": env.get("FPLUS_USER") or "admin",
                      "password": env["FPLUS_PASSWORD"]}
    if env.get("FPLUS_TOKEN"):  # the saved token's end is not this one's
        profile = replace(profile, expires=None)
    return replace(profile, **{k: v for k, v in overrides.items() if v})


def save(profile: Profile, env: Mapping[str, str] = os.environ) -> Path:
    """Write ``profile`` (without any password) atomically, mode 0600; returns the path."""
    path = config_path(env)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    body = {k: v for k, v in asdict(profile).items() if v is not None and k != "password"}
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(body, fh, indent=2)
    os.replace(tmp, path)
    return path


class ProfileError(Exception):
    """The saved profile cannot be used."""
