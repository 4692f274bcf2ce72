"""A service's own principal, made by its ``seed`` step as the administrator.

Each central service (the Cluster Manager, the Git server) runs as its own principal holding
exactly the grants it uses. ``seed`` creates it, gives it exactly :class:`Grant`s (removing any
other it holds, e.g. from an older version) and keeps its password in a file of the service's
data dir, generated once (mode 0600) and reused, so seeding again never locks out a running
service.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Any, NamedTuple

from .http import ConfigStoreClient


class Grant(NamedTuple):
    """One grant a service principal holds."""

    permission: str
    target: str
    plural: bool = False
    object: str | None = None

    def body(self) -> dict[str, Any]:
        """The grant as the Auth API takes it."""
        body: dict[str, Any] = {"permission": self.permission, "target": self.target,
                                "plural": self.plural}
        if self.object is not None:
            body["object"] = self.object
        return body

    @classmethod
    def of(cls, found: dict[str, Any]) -> Grant:
        """A grant as the Auth API answers it."""
        return cls(found["permission"], found["target"], bool(found.get("plural")),
                   found.get("object"))


def ensure_service_principal(admin: ConfigStoreClient, name: str, label: str,
                             grants: list[Grant], password_file: Path) -> str:
    """Create or update principal ``name`` with exactly ``grants`` and the password kept in
    ``password_file``; returns its uuid."""
    principal = admin.create_principal(name, kept_password(password_file), label=label,
                                       grants=[g.body() for g in grants])
    wanted = set(grants)
    for uuid in admin.find_grants(principal=principal):
        if Grant.of(admin.get_grant(uuid)) not in wanted:
            admin.delete_grant(uuid)
    return principal


def kept_password(path: Path) -> str:
    """The password in ``path`` (tightened to 0600); a new one written there if none."""
    if path.exists():
        path.chmod(0o600)
        password = path.read_text().strip()
        if password:
            return password
        path.unlink()
    path.parent.mkdir(parents=True, exist_ok=True)
    password = secrets.token_urlsafe(24)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(password + "\n")
    return password
