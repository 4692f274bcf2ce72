"""In-memory stand-ins for the reconcile wing's two ports, for unit tests without processes.

:class:`FakeConfigDB` keeps entries, classes, principals and grants in dicts and answers
like the Config Store for the calls the reconcile wing makes (the ``ConfigDB`` protocol);
every call is logged in ``calls`` (a batch's operations as the calls they stand for, after
``batch``), ``requests`` counts what would be HTTP requests, and any call can be made to fail
once with ``fail`` (in a batch: the batch fails, and nothing of it stays).
:class:`FakeRepos` records what would be committed and archived.
"""

from __future__ import annotations

import copy
import functools
import itertools
import re
import threading
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import unquote

import json_merge_patch

from fplus.cluster_manager.model.name_claims import APP as CLAIM_APP
from fplus.config_store.client import (
    BatchOp,
    BatchResult,
    ConfigStoreError,
    Conflict,
    NotFound,
    PreconditionFailed,
)
from fplus.git.repo import ChangeSet, WriteResult

T = TypeVar("T")


class Injected(RuntimeError):
    """A failure a test asked for."""


def _serialised(cls: type[T]) -> type[T]:
    """Run each public method of ``cls`` under the instance's lock (reconciler tests call
    from several workers; a batch must see nothing change under it)."""
    def locked(method: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(method)
        def run(self: Any, *args: Any, **kwargs: Any) -> Any:
            with self._lock:
                return method(self, *args, **kwargs)
        return run

    for name, value in list(vars(cls).items()):
        if not name.startswith("_") and callable(value):
            setattr(cls, name, locked(value))
    return cls


@_serialised
class FakeConfigDB:
    """The Config Store, in memory (no ACLs: the reconcile wing runs with its own grants).

    Objects are tracked only as far as the steps rely on them: entries of the name claim app
    need their object first (404 otherwise, as in the Config Store), and ``blocked`` objects
    refuse deletion (409, as an object still in use does).
    """

    def __init__(self) -> None:
        self.entries: dict[tuple[str, str], Any] = {}
        self.objects: set[str] = set()
        self.blocked: set[str] = set()
        self.etags: dict[tuple[str, str], str] = {}
        self.members: dict[str, set[str]] = defaultdict(set)
        self.principals: dict[str, str] = {}  # name -> uuid
        self.labels: dict[str, str] = {}
        self.grants: dict[str, dict[str, Any]] = {}
        self.calls: list[tuple[str, tuple[Any, ...]]] = []
        self._failures: dict[tuple[str, tuple[Any, ...]], Exception] = {}
        self._ids = itertools.count(1)
        self.requests = 0
        self._batching = False
        self._lock = threading.RLock()

    # -- test controls --------------------------------------------------------------------
    def fail(self, method: str, *args: Any, error: Exception | None = None) -> None:
        """Make the next call of ``method`` whose arguments start with ``args`` raise."""
        self._failures[(method, args)] = error or Injected(f"{method}{args} failed")

    def _call(self, method: str, *args: Any) -> None:
        self.calls.append((method, args))
        self.requests += not self._batching
        for (name, prefix), error in list(self._failures.items()):
            if name == method and args[:len(prefix)] == prefix:
                del self._failures[(name, prefix)]
                raise error

    def count(self, method: str, *args: Any) -> int:
        """How many calls of ``method`` had arguments starting with ``args``."""
        return sum(1 for name, a in self.calls if name == method and a[:len(args)] == args)

    def _uuid(self) -> str:
        return f"00000000-0000-4000-8000-{next(self._ids):012d}"

    # -- batches --------------------------------------------------------------------------
    _STATE = ("entries", "objects", "etags", "members", "principals", "labels", "grants")

    def batch(self, ops: Sequence[BatchOp]) -> list[BatchResult]:
        """Run ``ops`` as the calls they stand for, all or nothing (state restored on a
        failure, which is raised with ``index`` set as the client does)."""
        self._call("batch", len(ops))
        saved = {name: copy.deepcopy(getattr(self, name)) for name in self._STATE}
        results: list[BatchResult] = []
        self._batching = True
        try:
            for index, op in enumerate(ops):
                try:
                    body = self._run(op)
                    results.append(BatchResult(200, self._etag_of(op), body))
                except ConfigStoreError as exc:
                    if exc.status not in op.accept:
                        exc.index = index
                        raise
                    results.append(BatchResult(exc.status, None, None))
        except BaseException:
            for name, value in saved.items():
                setattr(self, name, value)
            raise
        finally:
            self._batching = False
        return results

    def _run(self, op: BatchOp) -> Any:
        """One operation, by its method and path, as the single call it stands for."""
        body = op.body if isinstance(op.body, dict | list | str | int | float | bool) else None
        match = f"on {op.method} {op.path}"
        for (method, pattern), run in self._ROUTES.items():
            found = re.fullmatch(pattern, op.path)
            if method == op.method and found:
                return run(self, op, body, *map(unquote, found.groups()))
        raise AssertionError(f"the fake runs no batch operation {match}")

    def _etag_of(self, op: BatchOp) -> str | None:
        """The entry's etag after ``op``, as the Config Store sends it (entries only)."""
        found = re.fullmatch(self._ENTRY, op.path)
        if found is None or op.method == "DELETE":
            return None
        app, obj = map(unquote, found.groups())
        return self.etags.get((app, obj))

    def _entry_op(self, op: BatchOp, body: Any, app: str, obj: str) -> Any:
        if_match = op.headers.get("If-Match", "").strip('"') or None
        if op.method == "GET":
            if (app, obj) not in self.entries:
                self._call("get_config", app, obj)
                raise NotFound(404, None, f"no entry {app}/{obj}")
            return self.get_config(app, obj)
        if op.method == "PUT":
            self.put_config(app, obj, body, if_match=if_match,
                            if_none_match=op.headers.get("If-None-Match"))
        elif op.method == "PATCH":
            self.patch_config(app, obj, body)
        else:
            absent = (app, obj) not in self.entries
            self.delete_config(app, obj, if_match=if_match)
            if absent:
                raise NotFound(404, None, f"no entry {app}/{obj}")
        return None

    def _principal_op(self, op: BatchOp, body: Any) -> Any:
        principal = self.create_principal(body["name"], body.get("password"), body.get("uuid"),
                                          body.get("class"), label=body.get("label"),
                                          groups=body.get("groups"), grants=body.get("grants"))
        return {"uuid": principal, "name": body["name"]}

    def _identity_op(self, op: BatchOp, body: Any, name: str) -> Any:
        found = self.find_principal(name)
        if found is None:
            raise NotFound(404, None, f"no principal {name}")
        return found

    _ENTRY = "/v2/app/([^/]+)/object/([^/]+)"
    _ROUTES: dict[tuple[str, str], Callable[..., Any]] = {
        **dict.fromkeys((("GET", _ENTRY), ("PUT", _ENTRY), ("PATCH", _ENTRY), ("DELETE", _ENTRY)),
                        _entry_op),
        ("POST", "/v2/object"): lambda self, op, body: {
            "uuid": self.create_object(body["class"], body.get("uuid"))},
        ("DELETE", "/v2/object/([^/]+)"): lambda self, op, body, obj: self.delete_object(obj),
        ("PUT", "/v2/class/([^/]+)/direct/member/([^/]+)"):
            lambda self, op, body, klass, obj: self.add_member(klass, obj),
        ("DELETE", "/v2/class/([^/]+)/direct/member/([^/]+)"):
            lambda self, op, body, klass, obj: self.remove_member(klass, obj),
        ("POST", "/v2/principal"): _principal_op,
        ("DELETE", "/v2/principal/([^/]+)"):
            lambda self, op, body, principal: self.delete_principal(principal),
        ("GET", "/v2/identity/login/([^/]+)"): _identity_op,
    }

    # -- entries --------------------------------------------------------------------------
    def get_config(self, app: str, obj: str) -> Any | None:
        self._call("get_config", app, obj)
        return copy.deepcopy(self.entries.get((app, obj)))

    def get_config_with_etag(self, app: str, obj: str) -> tuple[Any | None, str | None]:
        self._call("get_config_with_etag", app, obj)
        return copy.deepcopy(self.entries.get((app, obj))), self.etags.get((app, obj))

    def put_config(self, app: str, obj: str, value: Any, *, if_match: str | None = None,
                   if_none_match: str | None = None) -> str:
        self._call("put_config", app, obj)
        if app == CLAIM_APP and obj not in self.objects:
            raise NotFound(404, None, f"no object {obj}")
        self._check(app, obj, if_match, if_none_match)
        return self._store(app, obj, copy.deepcopy(value))

    def _check(self, app: str, obj: str, if_match: str | None,
               if_none_match: str | None) -> None:
        current = self.etags.get((app, obj))
        if (if_none_match == "*" and current is not None) or \
                (if_match is not None and if_match != current):
            raise PreconditionFailed(412, None, f"{app}/{obj}: precondition failed")

    def patch_config(self, app: str, obj: str, patch: Any) -> str | None:
        self._call("patch_config", app, obj)
        if patch is None:
            self._drop(app, obj)
            return None
        current = copy.deepcopy(self.entries.get((app, obj), {}))
        return self._store(app, obj, json_merge_patch.merge(current, copy.deepcopy(patch)))

    def delete_config(self, app: str, obj: str, *, if_match: str | None = None) -> None:
        self._call("delete_config", app, obj)
        if if_match is not None:
            self._check(app, obj, if_match, None)
        self._drop(app, obj)

    def list_app_objects(self, app: str) -> list[str]:
        self._call("list_app_objects", app)
        return sorted(obj for a, obj in self.entries if a == app)

    def search(self, app: str, query: dict[str, Any]) -> list[str]:
        """Objects whose ``app`` entry has every top-level ``query`` field's value."""
        self._call("search", app)
        return sorted(obj for (a, obj), entry in self.entries.items() if a == app
                      and isinstance(entry, dict)
                      and all(entry.get(k) == v for k, v in query.items()))

    def _store(self, app: str, obj: str, value: Any) -> str:
        self.entries[(app, obj)] = value
        etag = self.etags[(app, obj)] = f"etag-{next(self._ids)}"
        return etag

    def _drop(self, app: str, obj: str) -> None:
        self.entries.pop((app, obj), None)
        self.etags.pop((app, obj), None)

    # -- classes and objects ----------------------------------------------------------------
    def class_members(self, klass: str) -> list[str]:
        self._call("class_members", klass)
        return sorted(self.members[klass])

    def add_member(self, klass: str, obj: str) -> None:
        self._call("add_member", klass, obj)
        self.members[klass].add(obj)

    def remove_member(self, klass: str, obj: str) -> None:
        self._call("remove_member", klass, obj)
        self.members[klass].discard(obj)

    def create_object(self, klass: str, uuid: str | None = None,
                      owner: str | None = None) -> str:
        self._call("create_object", klass, uuid)
        obj = uuid or self._uuid()
        self.objects.add(obj)
        self.members[klass].add(obj)
        return obj

    def delete_object(self, obj: str) -> None:
        self._call("delete_object", obj)
        if obj in self.blocked:
            raise Conflict(409, None, "object is in use")
        self.objects.discard(obj)
        for members in self.members.values():
            members.discard(obj)
        for key in [k for k in self.entries if k[1] == obj]:
            self._drop(*key)
        self.labels.pop(obj, None)

    # -- principals and grants --------------------------------------------------------------
    def create_principal(self, name: str, password: str | None = None, uuid: str | None = None,
                         klass: str | None = None, *, label: str | None = None,
                         groups: list[str] | None = None,
                         grants: list[dict[str, Any]] | None = None) -> str:
        self._call("create_principal", name)
        principal = self.principals.get(name) or uuid or self._uuid()
        self.principals[name] = principal
        if label is not None:
            self.labels[principal] = label
        for group in groups or []:
            self.members[group].add(principal)
        for grant in grants or []:
            full = {"principal": principal, "plural": False, **grant}
            if full not in self.grants.values():
                self.grants[self._uuid()] = full
        return principal

    def delete_principal(self, principal: str) -> None:
        self._call("delete_principal", principal)
        self.principals = {n: p for n, p in self.principals.items() if p != principal}
        self.grants = {g: v for g, v in self.grants.items() if v["principal"] != principal}

    def find_principal(self, name: str) -> str | None:
        self._call("find_principal", name)
        return self.principals.get(name)

    def find_grants(self, principal: str | None = None, permission: str | None = None,
                    target: str | None = None, plural: bool | None = None,
                    object: str | None = None) -> list[str]:
        self._call("find_grants", principal)
        wanted = {"principal": principal, "permission": permission, "target": target,
                  "plural": plural, "object": object}
        return [g for g, v in self.grants.items()
                if all(v.get(k) == w for k, w in wanted.items() if w is not None)]

    def get_grant(self, uuid: str) -> dict[str, Any]:
        self._call("get_grant", uuid)
        return copy.deepcopy(self.grants[uuid])


@dataclass
class FakeRepos:
    """Cluster repos as the files each would hold; archiving moves them aside."""

    files: dict[str, dict[str, Any]] = field(default_factory=dict)
    archived: list[str] = field(default_factory=list)
    commits: int = 0
    fail_next: Exception | None = None

    def write(self, cluster: str, changes: ChangeSet, message: str) -> WriteResult:
        if self.fail_next is not None:
            error, self.fail_next = self.fail_next, None
            raise error
        before = dict(self.files.get(cluster, {}))
        after = {p: c for p, c in before.items()
                 if not any(p.startswith(d + "/") for d in changes.replace_dirs)
                 and p not in changes.deletes}
        after.update(changes.writes)
        changed = after != before
        if changed:
            self.commits += 1
            self.files[cluster] = after
        return WriteResult(f"{self.commits:040x}", changed)

    def read_dir(self, cluster: str, prefix: str) -> dict[str, bytes]:
        return {p: c for p, c in self.files.get(cluster, {}).items()
                if p.startswith(prefix.rstrip("/") + "/")}

    def archive(self, cluster: str) -> None:
        self.files.pop(cluster, None)
        self.archived.append(cluster)

    def claim(self, cluster: str, name: str) -> None:
        pass  # our Git server: the name claim suffices

    def create(self, cluster: str, name: str) -> None:
        pass  # our Git server: the Git repository entry makes the repo

    def revoke_reader(self, cluster: str) -> None:
        pass  # our Git server: Flux's access is its Config Store principal's
