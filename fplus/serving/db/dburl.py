"""``--database`` URLs, shared by every service that takes one: how to name one in a
message without its password."""

from __future__ import annotations

import urllib.parse


def redacted(url: str) -> str:
    """``url`` with any password replaced by ``***`` (for messages and logs)."""
    try:
        parts = urllib.parse.urlsplit(url)
        password = parts.password
    except ValueError:  # not parseable: keep only what follows the credentials
        return url.split("@", 1)[-1] if "@" in url else url
    if password is None:
        return url
    userinfo, host = parts.netloc.rsplit("@", 1)
    user = userinfo.split(":", 1)[0]
    return urllib.parse.urlunsplit(parts._replace(netloc=f"{user}:***@{host}"))
