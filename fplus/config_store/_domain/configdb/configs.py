"""Config entries: read, PUT, merge-PATCH and DELETE with ETag conditions and schemas.

The Registration app is virtual (it reflects the object table); writing it changes the
object. Writing a ConfigSchema entry first checks that the schema is valid and that the
app's existing entries satisfy it.
"""

from __future__ import annotations

import json_merge_patch

from fplus.jsontypes import JsonValue

from ... import uuids
from ..common.errors import Conflict, MethodNotAllowed, NotFound
from ..common.jsonvalue import parse
from ..core.graph import Obj
from ..core.state import Core
from . import etags, objects
from .schemas import SchemaCache

REGISTRATION = uuids.App.Registration


def get(core: Core, app: str, obj: str) -> tuple[JsonValue, str] | None:
    """``(value, etag)`` of an entry, or None when absent."""
    if app == REGISTRATION:
        found = core.graph.get(obj)
        return (found.registration(), found.etag) if found else None
    stored = core.reader().get_config(app, obj)
    return (parse(stored[0]), stored[1]) if stored else None


def _entry(app: str, obj: str) -> tuple[str, str] | None:
    """What a write of ``app``/``obj`` reads first: the stored entry (Registration: none)."""
    return None if app == REGISTRATION else (app, obj)


def _require_app_and_object(core: Core, app: str, obj: str) -> None:
    if core.graph.get(app) is None:
        raise NotFound(f"app {app} not found")
    if core.graph.get(obj) is None:
        raise NotFound(f"object {obj} not found")


def _registered(core: Core, obj: str) -> Obj:
    """The object, read again inside the write: it may have gone since it was looked up."""
    current = core.graph.get(obj)
    if current is None:
        raise NotFound(f"object {obj} not found")
    return current


def put(core: Core, schemas: SchemaCache, caller: str, app: str, obj: str, value: JsonValue, *,
        if_match: str | None = None, if_none_match: str | None = None) -> tuple[bool, str]:
    """Store ``value``; returns ``(created, etag)``."""
    _require_app_and_object(core, app, obj)
    with core.transaction(_entry(app, obj)) as tx:
        if app == REGISTRATION:
            current = _registered(core, obj)
            etags.check(if_match, if_none_match, current.etag)
            return False, objects.write_registration(core, tx, caller, current, value).etag
        stored = tx.w.get_config(app, obj)
        etags.check(if_match, if_none_match, stored[1] if stored else None)
        schemas.validate(app, value)
        if app == uuids.App.ConfigSchema:
            schemas.check_new_schema(tx.w, obj, value)
        etag, created, _ = tx.put_config(app, obj, value, stored)
        return created, etag


def patch(core: Core, schemas: SchemaCache, caller: str, app: str, obj: str,
          patch_doc: JsonValue, *, if_match: str | None = None) -> tuple[bool, str]:
    """Apply an RFC 7386 merge patch (creating the entry from ``{}``); ``(created, etag)``."""
    _require_app_and_object(core, app, obj)
    with core.transaction(_entry(app, obj)) as tx:
        if app == REGISTRATION:
            current = _registered(core, obj)
            etags.check(if_match, None, current.etag)
            merged = json_merge_patch.merge(current.registration(), patch_doc)
            return False, objects.write_registration(core, tx, caller, current, merged).etag
        stored = tx.w.get_config(app, obj)
        etags.check(if_match, None, stored[1] if stored else None)
        base = parse(stored[0]) if stored else {}
        if not isinstance(base, dict):
            raise Conflict("the existing entry is not a JSON object; merge-patch refused")
        merged = json_merge_patch.merge(base, patch_doc)
        schemas.validate(app, merged)
        if app == uuids.App.ConfigSchema:
            schemas.check_new_schema(tx.w, obj, merged)
        etag, created, _ = tx.put_config(app, obj, merged, stored)
        return created, etag


def delete(core: Core, app: str, obj: str, *, if_match: str | None = None) -> None:
    """Delete an entry (404 if absent; 405 for Registration)."""
    if app == REGISTRATION:
        raise MethodNotAllowed("Registration entries cannot be deleted")
    _require_app_and_object(core, app, obj)
    with core.transaction(_entry(app, obj)) as tx:
        stored = tx.w.get_config(app, obj)
        etags.check(if_match, None, stored[1] if stored else None)
        if stored is None:
            raise NotFound("no such entry")
        tx.delete_config(app, obj)


def app_objects(core: Core, app: str) -> list[str]:
    """Objects having an entry for ``app`` (404 if the app is unknown)."""
    if core.graph.get(app) is None:
        raise NotFound(f"app {app} not found")
    if app == REGISTRATION:
        return sorted(core.graph.objects)
    return core.reader().config_objects(app)


def app_class_objects(core: Core, app: str, klass: str) -> list[str]:
    """Objects in ``klass`` (transitively) having an entry for ``app``."""
    if core.graph.get(klass) is None:
        raise NotFound(f"class {klass} not found")
    members = core.graph.members(klass)
    return [o for o in app_objects(core, app) if o in members]
