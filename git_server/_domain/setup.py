"""What the Git server needs in the Config Store, made by ``git-server seed`` (idempotent).

The Git repository configuration app with its schema, and the Git server's own principal
``git-server``: it reads repo configurations, and the grants of the permissions it checks
(Git Pull, Push and ManageStorage) in its callers' ACLs, and nothing else. Its password is
generated once into the data dir (mode 0600), where ``serve`` reads it.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Any

from config_store import uuids
from config_store.client import ConfigStoreClient

APP = uuids.App.GitRepoConfig
PRINCIPAL_NAME = "git-server"
PASSWORD_FILE = "git-server-password"  # noqa: S105 - a file name
GRANTS = (
    (uuids.ConfigDBPerm.ReadApp, APP),
    (uuids.AuthPerm.ReadACL, uuids.GitPerm.Pull),
    (uuids.AuthPerm.ReadACL, uuids.GitPerm.Push),
    (uuids.AuthPerm.ReadACL, uuids.GitPerm.ManageStorage),
)
"""``(permission, target)``: everything the Git server's principal holds."""
_SEGMENT = "[A-Za-z0-9][A-Za-z0-9._-]{0,62}"
SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "Git repository configuration",
    "type": "object",
    "required": ["path"],
    "properties": {
        "path": {"type": "string", "pattern": f"^{_SEGMENT}/{_SEGMENT}$",
                 "description": "group/name: the repo is also served at /git/<group>/<name>"},
        "pull": {"type": "object"},
        "hooks": {"type": "object"},
    },
}


def ensure_setup(client: ConfigStoreClient) -> None:
    """The Git repository configuration app, its name and its schema."""
    client.create_object(uuids.Class.App, APP)
    client.set_name(APP, "Git repository configuration")
    client.put_config(uuids.App.ConfigSchema, APP, SCHEMA)


def seed(admin: ConfigStoreClient, data_dir: Path) -> Path:
    """:func:`ensure_setup`, then the Git server's principal with exactly :data:`GRANTS`
    (any other grant it holds is removed); returns its password file."""
    ensure_setup(admin)
    path = password_file(data_dir)
    principal = admin.create_principal(
        PRINCIPAL_NAME, _password(path), label="Git server",
        grants=[{"permission": p, "target": t} for p, t in GRANTS])
    for uuid in admin.find_grants(principal=principal):
        if _key(admin.get_grant(uuid)) not in GRANTS:
            admin.delete_grant(uuid)
    return path


def password_file(data_dir: Path) -> Path:
    """Where ``seed`` keeps the Git server's password and ``serve`` reads it."""
    return data_dir / PASSWORD_FILE


def _key(grant: dict[str, Any]) -> tuple[str, str] | None:
    if grant.get("plural") or grant.get("object"):
        return None
    return grant["permission"], grant["target"]


def _password(path: Path) -> str:
    """The password in ``path``; a new one written there (0600) if there is none."""
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
