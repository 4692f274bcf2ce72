"""A write transaction over storage and the in-memory graph (:meth:`Core.transaction
<.state.Core.transaction>`): it writes both together and collects the change events, to be
published after the commit, and what the ACL must learn of it (:meth:`Tx.apply_acl`)."""

from __future__ import annotations

import uuid as uuidlib

from fplus.jsontypes import JsonValue

from ... import uuids
from ..._storage import GrantRow, Writer
from ..common.events import ConfigChanged, Event, StructureChanged
from ..common.jsonvalue import canonical
from .acl import Acl
from .graph import Graph, Obj


def new_uuid() -> str:
    """A fresh random UUID string."""
    return str(uuidlib.uuid4())


class Tx:
    """One write transaction over storage and the graph."""

    def __init__(self, graph: Graph, acl: Acl, writer: Writer) -> None:
        self.graph, self.acl = graph, acl
        self.w = writer
        self.events: list[Event] = []
        self.acl_dirty = False
        """The graph changed (objects or relations): a rollback reloads it."""
        self.stale: set[str] | None = set()
        """Whose cached ACL expansion the graph's changes made stale (None: anyone's)."""
        self.added_grants: list[GrantRow] = []
        self.removed_grants: list[str] = []

    # -- objects and relations --------------------------------------------------------
    def put_object(self, obj: Obj) -> Obj:
        """Store an object's facts with a fresh Registration etag."""
        obj = obj.evolve(etag=new_uuid())
        self.w.put_object(obj)
        self.graph.put(obj)
        self.acl_dirty = True
        if self.acl.grants_permission_in(obj.uuid):  # its rank expands those grants
            self.stale = None
        self.events.append(ConfigChanged(uuids.App.Registration, obj.uuid, obj.registration(),
                                         obj.etag))
        return obj

    def remove_object(self, uuid: str) -> None:
        """Delete an object, its entries and the relations where it is the lower end."""
        for app in self.w.config_apps_of(uuid):
            self.events.append(ConfigChanged(app, uuid, None, None))
        self.w.delete_object(uuid)
        self.graph.remove(uuid)
        self.acl_dirty = True
        self.stale = None
        self.events.append(ConfigChanged(uuids.App.Registration, uuid, None, None))
        self.events.append(StructureChanged())

    def set_member(self, klass: str, member: str, present: bool) -> None:
        """Add or remove a direct membership."""
        self.w.set_membership(klass, member, present)
        self.graph.set_member(klass, member, present)
        self.acl_dirty = True
        if self.stale is not None and not self.acl.grants_permission_in(klass):
            self.stale.add(member)  # its classes changed; no permission group's members did
        else:
            self.stale = None
        self.events.append(StructureChanged())

    def set_subclass(self, klass: str, sub: str, present: bool) -> None:
        """Add or remove a direct subclass link."""
        self.w.set_subclass(klass, sub, present)
        self.graph.set_subclass(klass, sub, present)
        self.acl_dirty = True
        self.stale = None
        self.events.append(StructureChanged())

    # -- config entries ---------------------------------------------------------------
    def put_config(self, app: str, obj: str, value: JsonValue,
                   current: tuple[str, str] | None) -> tuple[str, bool, bool]:
        """Store an entry over ``current`` (its stored ``(json, etag)``, read in this
        transaction); returns ``(etag, created, changed)``. Unchanged keeps its etag."""
        text = canonical(value)
        if current is not None and current[0] == text:
            return current[1], False, False
        etag = new_uuid()
        self.w.put_config(app, obj, text, etag)
        self.events.append(ConfigChanged(app, obj, value, etag))
        return etag, current is None, True

    def delete_config(self, app: str, obj: str) -> bool:
        """Delete an entry; True if it existed."""
        existed = self.w.delete_config(app, obj)
        if existed:
            self.events.append(ConfigChanged(app, obj, None, None))
        return existed

    def shareable(self) -> bool:
        """Whether a later write may run before this one's commit is published: it wrote
        entries only, none of them a schema (the graph, grants and schemas are what later
        writes read from memory, brought up to date as a commit is published)."""
        return not (self.acl_dirty or self.added_grants or self.removed_grants) and all(
            c.kind == "config" and c.a != uuids.App.ConfigSchema for c in self.w.changes)

    # -- grants -----------------------------------------------------------------------
    def put_grant(self, grant: GrantRow) -> None:
        """Store a grant."""
        self.w.put_grant(grant)
        self.added_grants.append(grant)

    def delete_grants(self, uuids_: list[str]) -> None:
        """Delete grants."""
        self.w.delete_grants(uuids_)
        self.removed_grants.extend(uuids_)

    def apply_acl(self) -> None:
        """The grants and graph changes into the ACL once committed (or, in a batch, once
        the operation ended); a replaced grant is removed first, then added again."""
        acl = self.acl
        if self.removed_grants:
            acl.remove(self.removed_grants)
        for grant in self.added_grants:
            acl.add(grant)
        if self.acl_dirty:
            acl.invalidate(self.stale)
