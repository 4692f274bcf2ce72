"""Objects, ranks, ownership and class relations (ConfigDB object model, reference §1.2)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from jsonschema import Draft202012Validator

from ... import uuids
from ..common.errors import Conflict, Forbidden, MethodNotAllowed, NotFound, Unprocessable
from ..core.graph import Obj
from ..core.state import Core
from ..core.tx import Tx, new_uuid

IMMUTABLE = frozenset({
    *uuids.RANK_ROOTS, uuids.Class.App, uuids.Class.Special, uuids.Class.Device,
    uuids.Class.Schema, uuids.Class.Principal, uuids.Class.Permission,
    uuids.App.Registration, uuids.App.ConfigSchema, uuids.NULL, uuids.Special.Unowned,
})
"""Objects DELETE refuses with 405."""

_REGISTRATION = Draft202012Validator({
    "type": "object",
    "required": ["uuid", "rank", "class", "deleted", "owner"],
    "additionalProperties": False,
    "properties": {
        "uuid": {"type": "string"}, "rank": {"type": "integer", "minimum": 0},
        "class": {"type": ["string", "null"]}, "owner": {"type": "string"},
        "deleted": {"type": "boolean"}, "strict": {"const": True},
    },
})


def require(core: Core, uuid: str) -> Obj:
    """The object, or 404."""
    obj = core.graph.get(uuid)
    if obj is None:
        raise NotFound(f"object {uuid} not found")
    return obj


def default_owner(core: Core, caller: str) -> str:
    """Objects a principal creates are its own; the root's are Unowned."""
    return uuids.Special.Unowned if core.acl.is_root(caller) else caller


def _check_give(core: Core, caller: str, owner: str) -> None:
    if core.graph.get(owner) is None:
        raise Conflict(f"owner {owner} is not an object")
    if owner not in (uuids.Special.Unowned, caller) and not core.acl.check(
            caller, uuids.ConfigDBPerm.GiveTo, owner):
        raise Forbidden("may not give objects to that owner")


def create(core: Core, caller: str, klass: str, uuid: str | None = None,
           owner: str | None = None) -> tuple[Obj, bool]:
    """Create an object in ``klass`` (or undelete/reclassify an existing one)."""
    cls = require_class(core, klass)
    if owner is not None:
        _check_give(core, caller, owner)
    with core.transaction() as tx:
        existing = core.graph.get(uuid) if uuid else None
        if existing is not None:
            reg = existing.registration() | {"class": klass, "deleted": False}
            if owner is not None:
                reg["owner"] = owner
            return write_registration(core, tx, caller, existing, reg), False
        return create_in(tx, cls, uuid or new_uuid(), owner or default_owner(core, caller)), True


def require_class(core: Core, klass: str) -> Obj:
    """The class ``klass`` (409 if it is no object or an individual)."""
    cls = core.graph.get(klass)
    if cls is None:
        raise Conflict(f"class {klass} is not an object")
    if cls.rank < 1:
        raise Conflict(f"{klass} is an individual, not a class")
    return cls


def create_in(tx: Tx, cls: Obj, uuid: str, owner: str) -> Obj:
    """Write a new object ``uuid`` of class ``cls`` owned by ``owner`` within ``tx``."""
    obj = tx.put_object(Obj(uuid, cls.rank - 1, cls.uuid, owner, False, ""))
    tx.set_member(cls.uuid, obj.uuid, True)
    if obj.rank >= 1:
        tx.set_subclass(uuids.RANK_ROOTS[obj.rank - 1], obj.uuid, True)
    return obj


def delete(core: Core, uuid: str) -> None:
    """Delete an object and its entries; 409 with the blockers if anything depends on it."""
    if uuid in IMMUTABLE:
        raise MethodNotAllowed(f"object {uuid} is immutable")
    require(core, uuid)
    with core.transaction() as tx:
        blockers = core.graph.direct_members(uuid) | core.graph.direct_subclasses(uuid)
        blockers |= set(tx.w.config_objects(uuid))
        if blockers:
            raise Conflict("object is in use", body=sorted(blockers))
        tx.remove_object(uuid)
        tx.w.delete_principal(uuid)


@dataclass(frozen=True)
class Registration:
    """A Registration entry as written, checked against :data:`_REGISTRATION`."""

    uuid: str
    rank: int
    klass: str | None
    owner: str
    deleted: bool

    @classmethod
    def parse(cls, value: object) -> Registration:
        """422 (saying what is wrong) unless ``value`` is a Registration entry."""
        errors = sorted(e.message for e in _REGISTRATION.iter_errors(value))
        if errors or not isinstance(value, dict):
            raise Unprocessable("invalid registration: " + "; ".join(errors))
        uuid, rank, klass = value["uuid"], value["rank"], value["class"]
        owner, deleted = value["owner"], value["deleted"]
        if not (isinstance(uuid, str) and isinstance(rank, int) and isinstance(owner, str)
                and isinstance(deleted, bool) and (klass is None or isinstance(klass, str))):
            raise Unprocessable("invalid registration")  # the schema let none of these by
        return cls(uuid, rank, klass, owner, deleted)


def write_registration(core: Core, tx: Tx, caller: str, obj: Obj, value: object) -> Obj:
    reg = Registration.parse(value)
    if reg.uuid != obj.uuid:
        raise Conflict("an object's uuid cannot change")
    if reg.rank != obj.rank:
        raise Conflict("changing an object's rank is not supported")
    owner, klass = obj.owner, obj.klass
    if reg.owner != obj.owner:
        if caller != obj.owner and not core.acl.check(caller, uuids.ConfigDBPerm.TakeFrom,
                                                      obj.owner):
            raise Forbidden("may not take objects from their owner")
        _check_give(core, caller, reg.owner)
        owner = reg.owner
    if reg.klass != obj.klass:
        cls = core.graph.get(reg.klass) if reg.klass else None
        if cls is None or cls.rank != obj.rank + 1:
            raise Conflict("new primary class must be a class one rank above the object")
        klass = cls.uuid
        tx.set_member(cls.uuid, obj.uuid, True)
    if (reg.deleted, owner, klass) == (obj.deleted, obj.owner, obj.klass):
        return obj
    return tx.put_object(replace(obj, deleted=reg.deleted, owner=owner, klass=klass))


# -- class relations ------------------------------------------------------------------
def set_member(core: Core, klass: str, member: str, present: bool) -> None:
    """Add or remove ``member`` as a direct member of ``klass``."""
    cls, obj = require(core, klass), require(core, member)
    if present and obj.rank != cls.rank - 1:
        raise Conflict("a member must be exactly one rank below its class")
    if not present and obj.klass == klass:
        raise Conflict("cannot remove an object from its primary class")
    with core.transaction() as tx:
        if core.graph.has_direct_member(klass, member) != present:
            tx.set_member(klass, member, present)


def set_subclass(core: Core, klass: str, sub: str, present: bool) -> None:
    """Add or remove ``sub`` as a direct subclass of ``klass``."""
    cls, obj = require(core, klass), require(core, sub)
    if obj.rank == 0:
        raise (Conflict if present else NotFound)("individuals cannot be subclasses")
    graph = core.graph
    with core.transaction() as tx:
        if present:
            if obj.rank != cls.rank:
                raise Conflict("a subclass must have the rank of its superclass")
            if klass in graph.subclasses(sub):
                raise Conflict("that would make a subclass cycle")
            if graph.has_direct_subclass(klass, sub):
                return
            tx.set_subclass(klass, sub, True)
            ancestors = graph.superclasses(klass) - {klass}
            for redundant in graph.direct_superclasses(sub) & ancestors:
                tx.set_subclass(redundant, sub, False)
        elif graph.has_direct_subclass(klass, sub):
            tx.set_subclass(klass, sub, False)
            if not graph.direct_superclasses(sub):
                tx.set_subclass(uuids.RANK_ROOTS[obj.rank - 1], sub, True)


def class_view(core: Core, klass: str, relation: str, direct: bool) -> list[str]:
    """Members or subclasses (closure, or direct only) of an existing class."""
    require(core, klass)
    graph = core.graph
    if relation == "member":
        found = graph.direct_members(klass) if direct else graph.members(klass)
    else:
        found = graph.direct_subclasses(klass) if direct else graph.subclasses(klass)
    return sorted(found)


def rank_roots() -> list[str]:
    """Rank-root classes ordered by depth."""
    return list(uuids.RANK_ROOTS)
