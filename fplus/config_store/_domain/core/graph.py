"""In-memory object graph: objects, direct relations and their transitive closures.

The store loads it from storage at start and mutates it inside write transactions,
so class-membership questions (ACL checks, class listings) never touch the database.
All access goes through one re-entrant lock; closures are computed on demand.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, replace

from fplus.jsontypes import JsonObject

from ..._storage import ObjectRow


@dataclass(frozen=True)
class Obj(ObjectRow):
    """An object's registration facts: its stored row, and what the domain reads of it."""

    @classmethod
    def of(cls, row: ObjectRow) -> Obj:
        """The object a stored row describes."""
        return cls(row.uuid, row.rank, row.klass, row.owner, row.deleted, row.etag)

    def registration(self) -> JsonObject:
        """The Registration app entry for this object."""
        reg: JsonObject = {"uuid": self.uuid, "rank": self.rank, "owner": self.owner,
               "deleted": self.deleted, "strict": True}
        if self.klass is not None:
            reg["class"] = self.klass
        return reg

    def evolve(self, *, owner: str | None = None, etag: str | None = None) -> Obj:
        """A copy with the owner or etag given (its other facts: :func:`dataclasses.replace`)."""
        return replace(self, owner=self.owner if owner is None else owner,
                       etag=self.etag if etag is None else etag)


class Graph:
    """Objects with direct membership/subclass relations and closure queries."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.objects: dict[str, Obj] = {}
        self._members: dict[str, set[str]] = defaultdict(set)
        self._member_of: dict[str, set[str]] = defaultdict(set)
        self._subs: dict[str, set[str]] = defaultdict(set)
        self._supers: dict[str, set[str]] = defaultdict(set)

    def load(self, objects: Iterable[ObjectRow], members: Iterable[tuple[str, str]],
             subclasses: Iterable[tuple[str, str]]) -> None:
        """Replace the whole graph with stored state (readers never see it half-built)."""
        fresh = Graph()
        for r in objects:
            fresh.objects[r.uuid] = Obj.of(r)
        for klass, member in members:
            fresh.set_member(klass, member, True)
        for klass, sub in subclasses:
            fresh.set_subclass(klass, sub, True)
        with self.lock:
            self.objects, self._members, self._member_of = (
                fresh.objects, fresh._members, fresh._member_of)
            self._subs, self._supers = fresh._subs, fresh._supers

    # -- mutation ---------------------------------------------------------------------
    def put(self, obj: Obj) -> None:
        """Insert or replace an object's facts."""
        with self.lock:
            self.objects[obj.uuid] = obj

    def remove(self, uuid: str) -> None:
        """Forget an object and the relations where it is the lower end."""
        with self.lock:
            self.objects.pop(uuid, None)
            for klass in self._member_of.pop(uuid, set()):
                self._members[klass].discard(uuid)
            for klass in self._supers.pop(uuid, set()):
                self._subs[klass].discard(uuid)

    def set_member(self, klass: str, member: str, present: bool) -> None:
        """Add or remove a direct membership."""
        with self.lock:
            if present:
                self._members[klass].add(member)
                self._member_of[member].add(klass)
            else:
                self._members[klass].discard(member)
                self._member_of[member].discard(klass)

    def set_subclass(self, klass: str, sub: str, present: bool) -> None:
        """Add or remove a direct subclass link."""
        with self.lock:
            if present:
                self._subs[klass].add(sub)
                self._supers[sub].add(klass)
            else:
                self._subs[klass].discard(sub)
                self._supers[sub].discard(klass)

    # -- queries ----------------------------------------------------------------------
    def get(self, uuid: str) -> Obj | None:
        """An object's facts, or None."""
        return self.objects.get(uuid)

    def direct_members(self, klass: str) -> set[str]:
        """Direct members of a class."""
        with self.lock:
            return set(self._members.get(klass, ()))

    def has_direct_member(self, klass: str, obj: str) -> bool:
        """Whether ``obj`` is a direct member of ``klass`` (no copy of its members)."""
        with self.lock:
            return obj in self._members.get(klass, ())

    def has_direct_subclass(self, klass: str, sub: str) -> bool:
        """Whether ``sub`` is a direct subclass of ``klass`` (no copy of its subclasses)."""
        with self.lock:
            return sub in self._subs.get(klass, ())

    def direct_subclasses(self, klass: str) -> set[str]:
        """Direct subclasses of a class."""
        with self.lock:
            return set(self._subs.get(klass, ()))

    def direct_superclasses(self, klass: str) -> set[str]:
        """Direct superclasses of a class."""
        with self.lock:
            return set(self._supers.get(klass, ()))

    def direct_classes(self, obj: str) -> set[str]:
        """Classes an object is a direct member of."""
        with self.lock:
            return set(self._member_of.get(obj, ()))

    def _walk(self, start: Iterable[str], edges: dict[str, set[str]]) -> set[str]:
        seen: set[str] = set()
        stack = list(start)
        while stack:
            node = stack.pop()
            if node not in seen:
                seen.add(node)
                stack.extend(edges.get(node, ()))
        return seen

    def subclasses(self, klass: str) -> set[str]:
        """Reflexive transitive subclasses of a class."""
        with self.lock:
            return self._walk([klass], self._subs)

    def superclasses(self, klass: str) -> set[str]:
        """Reflexive transitive superclasses of a class."""
        with self.lock:
            return self._walk([klass], self._supers)

    def members(self, klass: str) -> set[str]:
        """Transitive members: direct members of any subclass of ``klass``."""
        with self.lock:
            out: set[str] = set()
            for sub in self._walk([klass], self._subs):
                out |= self._members.get(sub, set())
            return out

    def classes_of(self, obj: str) -> set[str]:
        """Every class ``obj`` is a transitive member of."""
        with self.lock:
            return self._walk(self._member_of.get(obj, ()), self._supers)

    def is_member(self, obj: str, klass: str) -> bool:
        """True if ``obj`` is a transitive member of ``klass``."""
        return klass in self.classes_of(obj)
