"""What the Git server needs in the Config Store, ensured at every start (idempotent)."""

from __future__ import annotations

from config_store import uuids
from config_store.client import ConfigStoreClient

APP = uuids.App.GitRepoConfig
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
