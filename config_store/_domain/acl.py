"""Factory+ Auth ACL model: grants expanded per principal, and ``check_acl``.

A grant ``{principal, permission, target, plural}`` applies to P when ``principal`` is P or
a class P is a transitive member of. A permission that is a class (a permission group)
stands for its transitive members. ``plural`` targets stand for the transitive members of
the target class; ``Self`` is P; ``Mine`` is every object P owns; the Null target is the
wildcard when a check allows it.

Extension (ours, not in ACS): a grant may carry ``object``, restricting an app permission
(``ReadApp``/``WriteApp`` on an app) to that app's entry for one object only, so an edge's
principal can write its own Edge cluster status entry and no other.
"""

from __future__ import annotations

import threading
from collections import defaultdict

from .. import uuids
from .._storage import GrantRow
from .graph import Graph


class Acl:
    """Grants held in memory with a per-principal expansion cache."""

    def __init__(self, graph: Graph, root: str | None = None) -> None:
        self.graph = graph
        self.root = root
        self.grants: dict[str, GrantRow] = {}
        self._by_principal: dict[str, dict[str, GrantRow]] = defaultdict(dict)
        self._lock = threading.Lock()
        self._cache: dict[str, dict[str, list[GrantRow]]] = {}

    def load(self, grants: list[GrantRow]) -> None:
        """Replace the grant set."""
        by_principal: dict[str, dict[str, GrantRow]] = defaultdict(dict)
        for g in grants:
            by_principal[g.principal][g.uuid] = g
        with self._lock:
            self.grants = {g.uuid: g for g in grants}
            self._by_principal = by_principal
            self._cache.clear()

    def invalidate(self) -> None:
        """Drop cached expansions (grants, classes or owners changed)."""
        with self._lock:
            self._cache.clear()

    def add(self, grant: GrantRow) -> None:
        """Record a committed grant."""
        with self._lock:
            self.grants[grant.uuid] = grant
            self._by_principal[grant.principal][grant.uuid] = grant
            self._cache.clear()

    def remove(self, uuids_: list[str]) -> None:
        """Forget committed deletions."""
        with self._lock:
            for u in uuids_:
                gone = self.grants.pop(u, None)
                if gone is not None:
                    self._by_principal[gone.principal].pop(u, None)
            self._cache.clear()

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

    def _entries(self, principal: str) -> dict[str, list[GrantRow]]:
        with self._lock:
            cached = self._cache.get(principal)
        if cached is not None:
            return cached
        holders = {principal} | self.graph.classes_of(principal)
        with self._lock:
            held = [g for h in holders for g in (self._by_principal.get(h) or {}).values()]
        by_perm: dict[str, list[GrantRow]] = defaultdict(list)
        for grant in held:
            for perm in self._permissions(grant.permission):
                by_perm[perm].append(grant)
        result = dict(by_perm)
        with self._lock:
            self._cache[principal] = result
        return result

    def is_root(self, principal: str | None) -> bool:
        """True for the root (admin) principal, which every check allows."""
        return principal is not None and principal == self.root

    def check(self, principal: str | None, permission: str, target: str, *, wild: bool = True,
              obj: str | None = None) -> bool:
        """``check_acl``: may ``principal`` use ``permission`` on ``target``?

        ``obj`` names the entry's object for app permissions; grants restricted to an
        object match only that object.
        """
        if principal is None:
            return False
        if self.is_root(principal):
            return True
        for grant in self._entries(principal).get(permission, ()):
            if grant.object is not None and grant.object != obj:
                continue
            if self._target_matches(grant, principal, target, wild):
                return True
        return False

    def _target_matches(self, grant: GrantRow, principal: str, target: str, wild: bool) -> bool:
        t = grant.target
        if t == target or (wild and t == uuids.NULL):
            return True
        if t == uuids.Special.Self:
            return target == principal
        if t == uuids.Special.Mine:
            owned = self.graph.get(target)
            return owned is not None and owned.owner == principal
        return grant.plural and self.graph.is_member(target, t)

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
