"""Factory+ Auth ACL model: grants expanded per principal, and ``check_acl``.

A grant ``{principal, permission, target, plural}`` applies to P when ``principal`` is P or
a class P is a transitive member of. A permission that is a class (a permission group)
stands for its transitive members. ``plural`` targets stand for the transitive members of
the target class; ``Self`` is P; ``Mine`` is every object P owns; the Null target is the
wildcard when a check allows it.

Extension (ours, not in ACS): a grant may carry ``object``, restricting an app permission
(``ReadApp``/``WriteApp`` on an app) to that app's entry for one object only, so an edge's
principal can write its own Edge cluster status entry and no other. Restricted to
``Mine``, it allows the entries of every object the principal owns (the objects it created,
and one it is creating), so a service may name what it makes and nothing else. A check may
also name the entry's ``scope``, the object its value says it belongs to
(:mod:`..configdb.scopes`): a grant restricted to that object allows it too.

The grant rule (ours, least privilege; :meth:`Acl.may_grant`): creating a grant needs
WriteACL on its permission (as in ACS) **and** that the granting principal hold the
permission being granted, in the same or a wider form, through one of its own grants:

- the Null wildcard target covers every grant of that permission;
- a plural grant on class K covers plural grants on K and its subclasses, and non-plural
  grants on (transitive) members of K;
- a non-plural grant covers non-plural grants on the same target; a grant on Self covers
  non-plural grants on the granter itself, one on Mine those on objects the granter owns
  (what :meth:`Acl.check` lets the granter use);
- the relative targets Self and Mine are granted only by holding the same relative target
  (or the wildcard): the grantee gets over itself what the granter has over itself;
- a grant on the Null target (the wildcard) is covered only by the wildcard;
- an object-restricted grant covers only grants restricted to the same object; an
  unrestricted one covers restricted and unrestricted ones;
- granting a permission group needs a grant of that group (or of a group containing it),
  since a group stands for its future members too.

Instead of holding the permission, the granter may hold ``Auth.Perm.Grant`` on the target,
in a form covering the new grant by the same rules: it may then grant any permission it has
WriteACL on there. The root principal is exempt.
"""

from __future__ import annotations

import threading
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from ... import uuids
from ..._storage import GrantRow
from .graph import Graph


@dataclass(frozen=True)
class Prospect:
    """An object as a pending write will leave it: a member of ``klass`` (besides any
    classes it has) and owned by ``owner``."""

    klass: str
    owner: str


class Acl:
    """Grants held in memory with a per-principal expansion cache.

    A principal's expansion depends on the grants of the principal and of its classes, on
    its classes, and on the members of the permission groups those grants name; a change
    drops only the expansions it can change (:meth:`add`, :meth:`remove`,
    :meth:`invalidate`), so one principal's new grants or membership do not make every
    other principal's expansion be computed again."""

    def __init__(self, graph: Graph, root: str | None = None) -> None:
        self.graph = graph
        self.root = root
        self.grants: dict[str, GrantRow] = {}
        self._by_principal: dict[str, dict[str, GrantRow]] = defaultdict(dict)
        self._permissions_granted: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._cache: dict[str, dict[str, list[GrantRow]]] = {}
        self._generation = 0
        """Counts changes: an expansion computed across one is not kept."""

    def load(self, grants: list[GrantRow]) -> None:
        """Replace the grant set."""
        by_principal: dict[str, dict[str, GrantRow]] = defaultdict(dict)
        for g in grants:
            by_principal[g.principal][g.uuid] = g
        with self._lock:
            self.grants = {g.uuid: g for g in grants}
            self._by_principal = by_principal
            self._permissions_granted = Counter(g.permission for g in self.grants.values())
            self._cache.clear()
            self._generation += 1

    def invalidate(self, principals: Iterable[str] | None = None) -> None:
        """Drop cached expansions after the graph changed: those of ``principals`` (whose
        own classes changed), or all (None)."""
        with self._lock:
            if principals is None:
                self._cache.clear()
            else:
                for principal in principals:
                    self._cache.pop(principal, None)
            self._generation += 1

    def add(self, grant: GrantRow) -> None:
        """Record a committed grant."""
        with self._lock:
            replaced = self.grants.get(grant.uuid)
        holders = self._holders(grant.principal)
        if replaced is not None and replaced.principal != grant.principal:
            holders |= self._holders(replaced.principal)
        with self._lock:
            self._forget(grant.uuid)
            self.grants[grant.uuid] = grant
            self._by_principal[grant.principal][grant.uuid] = grant
            self._permissions_granted[grant.permission] += 1
            self._drop(holders)

    def remove(self, uuids_: list[str]) -> None:
        """Forget committed deletions."""
        with self._lock:
            principals = {g.principal for u in uuids_ if (g := self.grants.get(u))}
        holders = {h for p in principals for h in self._holders(p)}
        with self._lock:
            for u in uuids_:
                self._forget(u)
            self._drop(holders)

    def grants_permission_in(self, klass: str) -> bool:
        """Whether a grant names ``klass`` or one of its superclasses as its permission: a
        change to the members of ``klass`` changes that grant's expansion."""
        supers = self.graph.superclasses(klass)
        with self._lock:
            return any(self._permissions_granted[q] for q in supers)

    def _holders(self, principal: str) -> set[str]:
        """Whom a grant to ``principal`` applies to: it and its transitive members."""
        return {principal} | self.graph.members(principal)

    def _forget(self, uuid: str) -> None:
        """Drop a grant from the indexes (the lock held; the caller drops the expansions of
        its holders)."""
        gone = self.grants.pop(uuid, None)
        if gone is None:
            return
        self._by_principal[gone.principal].pop(uuid, None)
        self._permissions_granted[gone.permission] -= 1
        if self._permissions_granted[gone.permission] <= 0:
            del self._permissions_granted[gone.permission]

    def _drop(self, principals: Iterable[str]) -> None:
        """Drop the expansions of ``principals`` (the lock held)."""
        for principal in principals:
            self._cache.pop(principal, None)
        self._generation += 1

    def find(self, principal: str | None = None, permission: str | None = None,
             target: str | None = None, plural: bool | None = None,
             obj: str | None = None) -> list[GrantRow]:
        """Grants matching a pattern (None fields match anything)."""
        pattern = {"permission": permission, "target": target, "plural": plural, "object": obj}
        with self._lock:
            pool = list((self._by_principal.get(principal) or {}).values() if principal
                        else self.grants.values())
        return [g for g in pool
                if all(v is None or getattr(g, k) == v for k, v in pattern.items())]

    def _permissions(self, permission: str) -> set[str]:
        obj = self.graph.get(permission)
        if obj is not None and obj.rank > 0:
            return self.graph.members(permission)
        return {permission}

    def _held(self, principal: str) -> list[GrantRow]:
        """The grants naming ``principal`` or a class it is a transitive member of."""
        holders = {principal} | self.graph.classes_of(principal)
        with self._lock:
            return [g for h in holders for g in (self._by_principal.get(h) or {}).values()]

    def _entries(self, principal: str) -> dict[str, list[GrantRow]]:
        with self._lock:
            cached = self._cache.get(principal)
            generation = self._generation
        if cached is not None:
            return cached
        by_perm: dict[str, list[GrantRow]] = defaultdict(list)
        for grant in self._held(principal):
            for perm in self._permissions(grant.permission):
                by_perm[perm].append(grant)
        result = dict(by_perm)
        with self._lock:
            if self._generation == generation:
                self._cache[principal] = result
        return result

    def is_root(self, principal: str | None) -> bool:
        """True for the root (admin) principal, which every check allows."""
        return principal is not None and principal == self.root

    def check(self, principal: str | None, permission: str, target: str, *, wild: bool = True,
              obj: str | None = None, prospect: Prospect | None = None,
              obj_owner: str | None = None, scope: str | None = None,
              any_object: bool = False) -> bool:
        """``check_acl``: may ``principal`` use ``permission`` on ``target``?

        ``obj`` names the entry's object for app permissions; grants restricted to an
        object match only that object (``Mine``: an object ``principal`` owns, or one
        being created for owner ``obj_owner``) or the entry's ``scope``. ``any_object``:
        may it use the permission on some entry at least (any restriction matches).
        ``prospect`` checks ``target`` as it will be once a pending write (in one
        transaction with this check's decision) has made it.
        """
        if principal is None:
            return False
        if self.is_root(principal):
            return True
        for grant in self._entries(principal).get(permission, ()):
            if (grant.object is not None and not any_object and grant.object != scope
                    and not self._object_matches(grant.object, principal, obj, obj_owner)):
                continue
            if self._target_matches(grant, principal, target, wild, prospect):
                return True
        return False

    def _object_matches(self, restricted: str, principal: str, obj: str | None,
                        obj_owner: str | None) -> bool:
        if restricted == obj:
            return True
        if restricted != uuids.Special.Mine or obj is None:
            return False
        found = self.graph.get(obj)
        owner = found.owner if found is not None else obj_owner
        return owner == principal

    def _target_matches(self, grant: GrantRow, principal: str, target: str, wild: bool,
                        prospect: Prospect | None = None) -> bool:
        t = grant.target
        if t == target or (wild and t == uuids.NULL):
            return True
        if t == uuids.Special.Self:
            return target == principal
        if t == uuids.Special.Mine:
            if prospect is not None:
                return prospect.owner == principal
            owned = self.graph.get(target)
            return owned is not None and owned.owner == principal
        if not grant.plural:
            return False
        classes = self.graph.classes_of(target)
        if prospect is not None:
            classes |= self.graph.superclasses(prospect.klass)
        return t in classes

    def may_grant(self, principal: str | None, grant: GrantRow) -> bool:
        """May ``principal`` create ``grant`` by the grant rule (module docstring)? Checks
        only the holding half; WriteACL on the permission is checked as any permission."""
        if principal is None:
            return False
        if self.is_root(principal):
            return True
        held = self._holding(principal, grant.permission)
        held += self._entries(principal).get(uuids.AuthPerm.Grant, [])
        return any(self._covers(h, principal, grant) for h in held)

    def holds_any(self, principal: str | None, permission: str) -> bool:
        """Whether ``principal`` holds ``permission`` on anything (root: always)."""
        return self.is_root(principal) or bool(principal and self._holding(principal,
                                                                             permission))

    def _holding(self, principal: str, permission: str) -> list[GrantRow]:
        """The principal's grants conferring ``permission`` (a group: the group itself)."""
        obj = self.graph.get(permission)
        if obj is None or obj.rank == 0:
            return list(self._entries(principal).get(permission, ()))
        return [g for g in self._held(principal)
                if permission in self.graph.subclasses(g.permission)]

    def _covers(self, held: GrantRow, principal: str, wanted: GrantRow) -> bool:
        """Does ``held`` (one of ``principal``'s grants) cover ``wanted`` (same permission)?"""
        if held.object is not None and held.object != wanted.object:
            return False
        if held.target == uuids.NULL:
            return True
        if wanted.target in (uuids.NULL, uuids.Special.Self, uuids.Special.Mine):
            return held.target == wanted.target
        if wanted.plural:
            return held.plural and wanted.target in self.graph.subclasses(held.target)
        if held.plural and held.target not in (uuids.Special.Self, uuids.Special.Mine):
            return self.graph.is_member(wanted.target, held.target)  # not the class itself
        return self._target_matches(held, principal, wanted.target, wild=False)

    def expanded(self, principal: str) -> list[dict[str, str]]:
        """The principal's ACL as ``[{permission, target}]`` (plural/Self/Mine expanded).

        An entry from an object-restricted grant also carries ``object``.
        """
        out: set[tuple[str, str, str | None]] = set()
        for perm, grants in self._entries(principal).items():
            for g in grants:
                if g.target == uuids.Special.Self:
                    targets = {principal}
                elif g.target == uuids.Special.Mine:
                    targets = {o.uuid for o in list(self.graph.objects.values())
                               if o.owner == principal}
                elif g.plural:
                    targets = self.graph.members(g.target)
                else:
                    targets = {g.target}
                out |= {(perm, t, g.object) for t in targets}
        return [{"permission": p, "target": t} | ({"object": o} if o else {})
                for p, t, o in sorted(out, key=lambda e: (e[0], e[1], e[2] or ""))]
