"""What the Git server needs in the Config Store, made by ``git-server seed`` (idempotent).

The Git repository configuration app with its schema, and the Git server's own principal
``git-server``: it reads repo configurations, and the grants of the permissions it checks
(Git Pull, Push and ManageStorage) in its callers' ACLs, and nothing else. Its password is
generated once into the data dir (mode 0600), where ``serve`` reads it.
"""

from __future__ import annotations

from pathlib import Path

from fplus.config_store import uuids
from fplus.config_store.client import ConfigStoreClient, Grant, ensure_service_principal

APP = uuids.App.GitRepoConfig
PRINCIPAL_NAME = "git-server"
PASSWORD_FILE = "git-server-password"  # noqa: S105 - a file name
GRANTS = [
    Grant(uuids.ConfigDBPerm.ReadApp, APP),
    Grant(uuids.AuthPerm.ReadACL, uuids.GitPerm.Pull),
    Grant(uuids.AuthPerm.ReadACL, uuids.GitPerm.Push),
    Grant(uuids.AuthPerm.ReadACL, uuids.GitPerm.ManageStorage),
    # where it is reached, for the Directory: its own Service URL entry and no other
    Grant(uuids.ConfigDBPerm.WriteApp, uuids.App.ServiceUrl, False, uuids.Service.Git),
]
"""Everything the Git server's principal holds."""
_SEGMENT = "[A-Za-z0-9][A-Za-z0-9._-]{0,62}"
SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "Git repository configuration",
    "type": "object",
    "required": ["path"],
    "properties": {
        "path": {"type": "string", "pattern": f"^{_SEGMENT}/{_SEGMENT}$",
                 "description": "group/name: the repo is also served at /git/<group>/<name>"},
        "pull": {
            "description": "Auto-pull mirrors, as upstream: branch -> {url, ref?, interval?, "
                           "merge?, auth?: {secretRef}}",
            "type": "object",
            "additionalProperties": {
                "type": "object",
                "required": ["url"],
                "properties": {
                    "url": {"type": "string", "pattern": "^(https?|git)://[^/]+"},
                    "ref": {"type": "string", "minLength": 1},
                    "interval": {"type": ["string", "number"]},
                    "merge": {"type": "string", "minLength": 1},
                    "auth": {"type": "object",
                             "properties": {"secretRef": {"type": "string", "minLength": 1}}},
                },
            },
        },
        "hooks": {"type": "object"},
    },
}


def ensure_setup(client: ConfigStoreClient) -> None:
    """The Git repository configuration app, its name and its schema."""
    client.create_object(uuids.Class.App, APP)
    client.set_name(APP, "Git repository configuration")
    client.put_config(uuids.App.ConfigSchema, APP, SCHEMA)


def seed(admin: ConfigStoreClient, data_dir: Path, *, rotate: bool = False) -> Path:
    """:func:`ensure_setup`, then the Git server's principal with exactly :data:`GRANTS`
    (see :func:`fplus.config_store.client.ensure_service_principal`); returns its password file."""
    ensure_setup(admin)
    path = password_file(data_dir)
    ensure_service_principal(admin, PRINCIPAL_NAME, "Git server", GRANTS, path, rotate=rotate)
    return path


def password_file(data_dir: Path) -> Path:
    """Where ``seed`` keeps the Git server's password and ``serve`` reads it."""
    return data_dir / PASSWORD_FILE
