"""A service's own principal, made by its ``seed`` step as the administrator.

Each central service (the Cluster Manager, the Git server) runs as its own principal holding
exactly the grants it uses. ``seed`` creates it, gives it exactly :class:`Grant`s (removing any
other it holds, e.g. from an older version) and keeps its password in a file of the service's
data dir (mode 0600): a new principal gets a password the Config Store generates (stored
there as a salted SHA-256, so a login costs no argon2 hash), unless the file already holds
one (e.g. mounted from a Kubernetes Secret), which it then gets. Seeding never replaces the
password of a principal that exists unless asked to (``rotate``): without the file that holds
it, it refuses (:class:`PasswordFileMissing`), as a new password would lock out the running
service.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import NamedTuple

from fplus.jsontypes import JsonObject

from .http import ConfigStoreClient


class Grant(NamedTuple):
    """One grant a service principal holds."""

    permission: str
    target: str
    plural: bool = False
    object: str | None = None

    def body(self) -> JsonObject:
        """The grant as the Auth API takes it."""
        body: JsonObject = {"permission": self.permission, "target": self.target,
                                "plural": self.plural}
        if self.object is not None:
            body["object"] = self.object
        return body

    @classmethod
    def of(cls, found: JsonObject) -> Grant:
        """A grant as the Auth API answers it."""
        permission, target, obj = found["permission"], found["target"], found.get("object")
        if not isinstance(permission, str) or not isinstance(target, str):
            raise ValueError(f"not a grant: {found!r:.200}")
        return cls(permission, target, bool(found.get("plural")),
                   obj if isinstance(obj, str) else None)


class PasswordFileMissing(RuntimeError):
    """The principal exists but the password file that should hold its password does not."""


def ensure_service_principal(admin: ConfigStoreClient, name: str, label: str,
                             grants: list[Grant], password_file: Path, *,
                             rotate: bool = False) -> str:
    """Create or update principal ``name`` with exactly ``grants``; returns its uuid.

    A new principal gets the password kept in ``password_file`` (written if absent). An
    existing one keeps its password, unless ``rotate``: then a new one is written to the
    file and set. :class:`PasswordFileMissing` if it exists, ``rotate`` is off and the file
    is missing or empty."""
    password: str | None = None
    created = False
    if rotate:
        password = _write_password(password_file)
    elif admin.find_principal(name) is None:
        created = True
        password = _password_in(password_file)
    elif not _holds_password(password_file):
        raise PasswordFileMissing(
            f"principal {name} exists but {password_file} does not hold its password: give "
            "the data dir of the service that runs as it, or seed with --rotate-password "
            "(its running services then need the new file)")
    principal = admin.create_principal(name, password, label=label,
                                       grants=[g.body() for g in grants])
    if created:
        if password is None:  # the server's secret: kept as SHA-256, quick to check at login
            _write_password(password_file, admin.generate_password(principal))
        return principal  # created just now, with exactly these grants: none to sweep
    wanted = set(grants)
    for uuid in admin.find_grants(principal=principal):
        if Grant.of(admin.get_grant(uuid)) not in wanted:
            admin.delete_grant(uuid)
    return principal


def _password_in(path: Path) -> str | None:
    """The password kept in ``path`` (tightened to 0600), or None if there is none."""
    if not path.exists():
        return None
    path.chmod(0o600)
    return path.read_text().strip() or None


def _holds_password(path: Path) -> bool:
    try:
        return bool(path.read_text().strip())
    except OSError:
        return False


def _write_password(path: Path, password: str | None = None) -> str:
    """``password`` (default: a new random one) replacing ``path`` at once (0600; a service
    reading it meanwhile sees the old or the new one, never half of one)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    password = password or secrets.token_urlsafe(24)
    new = path.with_name(path.name + ".new")
    new.unlink(missing_ok=True)
    fd = os.open(new, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(password + "\n")
    os.replace(new, path)
    return password
