"""v2 dumps (reference §1.7): loading them (``POST /load``: objects in one transaction, then
configs) and exporting the whole ConfigDB as one (``GET /v2/dump``).

A dump is authoritative for the memberships and superclasses of the objects it lists.
Ours beside upstream: the objects are created before any relation is applied, so a dump may
name an object before listing it (an export lists objects in no particular order), and an
object may carry its ``owner`` (GiveTo on it needed, unless Unowned or the caller).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypedDict

from jsonschema import Draft202012Validator

from fplus.jsontypes import JsonValue, json_object, strings

from ... import uuids
from ...uuids import UUID_PATTERN as _UUID
from ..common.errors import Conflict, Forbidden, Unprocessable
from ..common.jsonvalue import parse
from ..core.graph import Obj
from ..core.state import Core
from ..core.tx import Tx
from . import configs
from .schemas import SchemaCache, errors_of

_UUIDS = {"type": "array", "items": {"type": "string", "pattern": _UUID}}
_DUMP = Draft202012Validator({
    "type": "object",
    "required": ["service", "version"],
    "properties": {
        "service": {"const": uuids.Service.ConfigDB},
        "version": {"const": 2},
        "objects": {"type": "object", "propertyNames": {"pattern": _UUID},
                    "additionalProperties": {
                        "type": "object", "propertyNames": {"pattern": _UUID},
                        "additionalProperties": {"type": ["object", "null"], "properties": {
                            "name": {"type": "string"}, "iri": {"type": "string"},
                            "memberOf": _UUIDS, "subclassOf": _UUIDS, "enum": _UUIDS,
                            "powersetOf": {"type": "string", "pattern": _UUID},
                            "owner": {"type": "string", "pattern": _UUID}}}}},
        "configs": {"type": "object", "propertyNames": {"pattern": _UUID},
                    "not": {"required": [uuids.App.Registration]},
                    "additionalProperties": {"type": "object",
                                             "propertyNames": {"pattern": _UUID}}},
    },
})


class ObjectSpec(TypedDict, total=False):
    """What a dump says of one object (checked against :data:`_DUMP`)."""

    owner: str
    name: str
    memberOf: list[str]
    subclassOf: list[str]
    enum: list[str]


def _spec(value: JsonValue) -> ObjectSpec:
    """An object's spec in a checked dump (null: nothing said)."""
    doc, spec = json_object(value), ObjectSpec()
    if isinstance(owner := doc.get("owner"), str):
        spec["owner"] = owner
    if isinstance(name := doc.get("name"), str):
        spec["name"] = name
    if "memberOf" in doc:
        spec["memberOf"] = strings(doc["memberOf"])
    if "subclassOf" in doc:
        spec["subclassOf"] = strings(doc["subclassOf"])
    if "enum" in doc:
        spec["enum"] = strings(doc["enum"])
    return spec


def load(core: Core, schemas: SchemaCache, caller: str, dump: JsonValue) -> None:
    """Apply a dump; 422 if malformed, 409 if it breaks the object model."""
    errors = errors_of(_DUMP, dump)
    if errors:
        raise Unprocessable("invalid dump: " + "; ".join(errors[:10]), body={"errors": errors})
    checked = json_object(dump)
    listed = [(klass, uuid, _spec(spec))
              for klass, objs in json_object(checked.get("objects")).items()
              for uuid, spec in json_object(objs).items()]
    with core.transaction() as tx:
        _create_objects(core, tx, caller, [(klass, uuid) for klass, uuid, _ in listed])
        for klass, uuid, spec in listed:
            _load_object(core, tx, caller, klass, uuid, spec)
    for app, entries in json_object(checked.get("configs")).items():
        for obj, value in json_object(entries).items():
            try:
                configs.put(core, schemas, caller, app, obj, value)
            except Conflict:
                continue


def _create_objects(core: Core, tx: Tx, caller: str, wanted: list[tuple[str, str]]) -> None:
    """Create every missing object of ``wanted`` (class, uuid), each once its class exists
    (a class listed in the same dump first); 409 naming a class that never does."""
    graph = core.graph
    pending = [(klass, uuid) for klass, uuid in wanted if graph.get(uuid) is None]
    while pending:
        later = []
        for klass, uuid in pending:
            cls = graph.get(klass)
            if cls is None:
                later.append((klass, uuid))
            elif graph.get(uuid) is None and cls.rank >= 1:
                owner = uuids.Special.Unowned if core.acl.is_root(caller) else caller
                obj = tx.put_object(Obj(uuid, cls.rank - 1, klass, owner, False, ""))
                tx.set_member(klass, uuid, True)
                if obj.rank >= 1:
                    tx.set_subclass(uuids.RANK_ROOTS[obj.rank - 1], uuid, True)
        if len(later) == len(pending):
            raise Conflict(f"dump names unknown class {later[0][0]}")
        pending = later


def _load_object(core: Core, tx: Tx, caller: str, klass: str, uuid: str,
                 spec: ObjectSpec) -> None:
    graph = core.graph
    cls = graph.get(klass)
    if cls is None or cls.rank < 1:
        raise Conflict(f"dump names unknown class {klass}")
    obj = graph.get(uuid)
    assert obj is not None  # made by _create_objects
    if "owner" in spec and spec["owner"] != obj.owner:
        obj = tx.put_object(obj.evolve(owner=_owner(core, caller, spec["owner"])))
    if "name" in spec:
        stored = tx.w.get_config(uuids.App.Info, uuid)
        info = parse(stored[0]) if stored else {}
        tx.put_config(uuids.App.Info, uuid, {**(info if isinstance(info, dict) else {}),
                                             "name": spec["name"]}, stored)
    if "memberOf" in spec:
        _replace(tx, set(spec["memberOf"]) | {obj.klass or klass},
                 graph.direct_classes(uuid), lambda c, on: tx.set_member(c, uuid, on),
                 lambda c: _rank_ok(core, c, obj.rank + 1))
    if "subclassOf" in spec and obj.rank == 0 and spec["subclassOf"]:
        raise Conflict(f"individual {uuid} cannot have superclasses")
    if "subclassOf" in spec and obj.rank >= 1:
        wanted = set(spec["subclassOf"]) or {uuids.RANK_ROOTS[obj.rank - 1]}
        _replace(tx, wanted, graph.direct_superclasses(uuid),
                 lambda c, on: tx.set_subclass(c, uuid, on),
                 lambda c: _rank_ok(core, c, obj.rank))
    if "enum" in spec:
        members = graph.direct_members(uuid)
        primary = {m for m in members if (o := graph.get(m)) is not None and o.klass == uuid}
        _replace(tx, set(spec["enum"]) | primary, members,
                 lambda m, on: tx.set_member(uuid, m, on),
                 lambda m: _rank_ok(core, m, obj.rank - 1))


def _owner(core: Core, caller: str, owner: str) -> str:
    """``owner`` if it exists and ``caller`` may give objects to it (409, 403)."""
    if core.graph.get(owner) is None:
        raise Conflict(f"dump names unknown owner {owner}")
    if owner not in (uuids.Special.Unowned, caller) and not core.acl.check(
            caller, uuids.ConfigDBPerm.GiveTo, owner):
        raise Forbidden(f"permission denied: giving objects to {owner} needs GiveTo on it")
    return owner


def _rank_ok(core: Core, uuid: str, rank: int) -> None:
    found = core.graph.get(uuid)
    if found is None:
        raise Conflict(f"dump refers to unknown object {uuid}")
    if found.rank != rank:
        raise Conflict(f"dump relation with {uuid} breaks the rank rules")


def _replace(tx: Tx, wanted: set[str], current: set[str], setter: Callable[[str, bool], None],
             check: Callable[[str], None]) -> None:
    for other in wanted - current:
        check(other)
        setter(other, True)
    for other in current - wanted:
        setter(other, False)


def export(core: Core, skip: frozenset[str] = frozenset()) -> dict[str, object]:
    """The whole ConfigDB as a v2 dump :func:`load` takes, read in one snapshot: every object
    with a class (but those in ``skip``) under its primary class, with its owner (unless
    skipped or gone), direct classes and direct superclasses; every entry but Registration's
    (made from the objects) and those of skipped objects, ConfigSchema's first (entries are
    checked against them)."""
    with core.storage.snapshot() as reader:
        rows = [r for r in reader.objects() if r.klass is not None and r.uuid not in skip]
        member_of: dict[str, list[str]] = {}
        for klass, member in reader.memberships():
            member_of.setdefault(member, []).append(klass)
        supers: dict[str, list[str]] = {}
        for klass, sub in reader.subclasses():
            supers.setdefault(sub, []).append(klass)
        apps = sorted({r.uuid for r in rows} & {m for m, cs in member_of.items()
                                                if uuids.Class.App in cs}
                      - {uuids.App.Registration},
                      key=lambda a: (a != uuids.App.ConfigSchema, a))
        configs = {app: {obj: parse(text) for obj, text, _ in reader.config_entries(app)
                         if obj not in skip} for app in apps}
    owners = {r.uuid for r in rows} | {uuids.Special.Unowned}
    objects: dict[str, dict[str, dict[str, object]]] = {}
    for row in sorted(rows, key=lambda r: (-r.rank, r.uuid)):
        spec: dict[str, object] = {"memberOf": sorted(member_of.get(row.uuid, []))}
        if row.owner in owners:  # not a skipped or deleted one: the loader's default then
            spec["owner"] = row.owner
        if supers.get(row.uuid):  # none: a rank root
            spec["subclassOf"] = sorted(supers[row.uuid])
        objects.setdefault(str(row.klass), {})[row.uuid] = spec
    return {"service": uuids.Service.ConfigDB, "version": 2, "objects": objects,
            "configs": {app: entries for app, entries in configs.items() if entries}}
