"""An object made as ACS makes one: the object of its class, its Info name and its app entry,
written together or not at all."""

from __future__ import annotations

from fplus.config_store.client import ConfigStoreClient
from fplus.config_store.client import Unprocessable as EntryRefused

from .errors import Unprocessable


def create_named_entry(cs: ConfigStoreClient, klass: str, app: str, uuid: str, name: str,
                       entry: object) -> None:
    """Object ``uuid`` of ``klass``, named ``name``, with ``entry`` in ``app`` (never over an
    entry already there); if the name or the entry fails, the object is deleted again, and
    an entry the app's schema refuses is a 422."""
    cs.create_object(klass, uuid)
    try:
        cs.set_name(uuid, name)
        cs.put_config(app, uuid, entry, if_none_match="*")
    except Exception as exc:
        cs.delete_object(uuid)
        if isinstance(exc, EntryRefused):
            raise Unprocessable(f"the Config Store refused the entry: {exc}") from exc
        raise
