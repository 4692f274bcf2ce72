"""A Kubernetes API the real ``kubectl`` can drive: Edge Sync's kmock emulator plus additions.

:class:`KubectlKubernetes` extends :class:`tests.edge_sync.emulator.EdgeKubernetes` (kmock 0.8,
pinned) with what ``kubectl`` needs to run the bootstrap script: every addition below is a
gap of kmock 0.8 and names the kubectl command that needs it.

1. ``/api/v1`` discovery says ``groupVersion: v1`` (kmock: ``/v1``; ``kubectl get nodes``
   then resolves to ``metrics.k8s.io`` nodes); subresources carry no short names (else
   ``kubectl get crd`` warns that ``crd`` is ambiguous); a group's preferred version is its
   highest by Kubernetes version priority (kmock: any; ``kubectl wait kustomization/x``).
2. ``/api/v1/namespaces[/<name>]`` are the cluster-scoped Namespace objects (kmock parses the
   name as a namespace prefix and answers 500): ``kubectl get|create namespace``.
3. Creating in a missing namespace fails ``namespaces "x" not found`` (the NamespaceLifecycle
   admission): ``kubectl apply`` of objects whose namespace was not created first.
4. Errors in the API server's words: 404 ``NotFound`` / 409 ``AlreadyExists`` with
   ``<resource> "<name>" not found`` (kmock: its own advice): kubectl's messages, and its
   client-side apply deciding to create.
5. Lists carry ``apiVersion``, ``kind: <Kind>List`` and a resourceVersion (kmock: neither;
   kubectl: "Object 'Kind' is missing"): every ``kubectl get``.
6. ``fieldSelector`` on ``metadata.name`` / ``metadata.namespace`` for lists and watches
   (kmock ignores it): ``kubectl wait`` lists and watches by name.
7. Watches are ``application/json`` streams filtered by selectors and ended after
   ``timeoutSeconds`` (kmock: ``application/octet-stream``, which kubectl refuses):
   ``kubectl wait`` when the condition is not met yet.
8. A CustomResourceDefinition serves its resources: every served version appears in
   discovery while the CRD exists (kmock: only declared resources): ``kubectl apply -f
   self-link.yaml`` after Flux's CRDs, ``kubectl wait kustomization/self-link``.
9. Secrets' ``stringData`` is merged into base64 ``data`` on write (as the API server does):
   ``kubectl apply --server-side -f credentials.yaml``, read back as the kubelet reads it.
10. Strategic merge patches drop their ``$`` directives and merge like a merge patch
    (kmock: the directives would be stored as keys): ``kubectl rollout restart``, client-side
    ``kubectl apply`` of an existing built-in object.
11. ``/openapi/v2`` (an empty document, protobuf) and ``/openapi/v3`` (per group-version:
    each resource's PATCH declaring the ``fieldValidation`` parameter) so that ``kubectl
    apply`` (``--validate=strict`` by default) leaves validation to the server instead of
    failing "failed to download openapi". The server does not validate (a remaining gap).
12. A protobuf Namespace body is decoded (kubectl 1.32's typed clients send protobuf; kmock
    reads JSON only): ``kubectl create namespace``. Other protobuf bodies get a 415.

Not emulated (the tests do not depend on it): conversion between a CRD's versions (objects
are stored per version), defaulting, validation, generation/observedGeneration, dry runs,
deletion cascades, and any controller: tests set conditions themselves (see ``cluster.py``).
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
from typing import Any

import aiohttp.web
import kmock

from tests.edge_sync.emulator import EdgeKubernetes
from tests.edge_sync.emulator import _header as header
from tests.edge_sync.emulator import _selected as labels_selected

CRDS = kmock.resource("apiextensions.k8s.io/v1/customresourcedefinitions")
NAMESPACES = kmock.resource("v1/namespaces")
SECRETS = kmock.resource("v1/secrets")
_NAMESPACES_PATH = re.compile(r"/api/v1/namespaces(?:/([^/]+)(?:/(status|finalize))?)?")
_VERSION = re.compile(r"v(\d+)(?:(alpha|beta)(\d+))?")


def version_priority(version: str) -> tuple[int, int, int, str]:
    """Sort key: GA before beta before alpha, higher numbers first, others last (by name)."""
    match = _VERSION.fullmatch(version)
    if match is None:
        return (3, 0, 0, version)
    major, level, minor = match.groups()
    rank = {None: 0, "beta": 1, "alpha": 2}[level]
    return (rank, -int(major), -int(minor or 0), version)


def _resource_name(resource: kmock.resource) -> str:
    return f"{resource.plural}.{resource.group}" if resource.group else str(resource.plural)


def _fields_selected(obj: dict[str, Any], selector: str) -> bool:
    """``metadata.name`` / ``metadata.namespace`` terms with ``=``, ``==`` or ``!=``."""
    meta = obj.get("metadata") or {}
    for term in filter(None, (t.strip() for t in selector.split(","))):
        negate = "!=" in term
        key, value = (s.strip() for s in re.split(r"!=|==|=", term, maxsplit=1))
        actual = meta.get(key.removeprefix("metadata.")) or ""
        if (actual == value) == negate:
            return False
    return True


def _without_directives(value: Any) -> Any:
    """A strategic merge patch without its ``$`` keys (``$setElementOrder/...``, ...)."""
    if isinstance(value, dict):
        return {k: _without_directives(v) for k, v in value.items() if not k.startswith("$")}
    if isinstance(value, list):
        return [_without_directives(v) for v in value]
    return value


def _fields(message: bytes) -> list[tuple[int, bytes | int]]:
    """A protobuf message's ``(field number, value)`` pairs (varints and length-delimited)."""
    def varint(at: int) -> tuple[int, int]:
        value = shift = 0
        while True:
            byte = message[at]
            value |= (byte & 0x7F) << shift
            at, shift = at + 1, shift + 7
            if byte < 0x80:
                return value, at

    found: list[tuple[int, bytes | int]] = []
    at = 0
    while at < len(message):
        key, at = varint(at)
        if key & 7 == 0:
            value, at = varint(at)
            found.append((key >> 3, value))
        elif key & 7 == 2:
            size, at = varint(at)
            found.append((key >> 3, message[at:at + size]))
            at += size
        else:
            raise ValueError(f"protobuf wire type {key & 7} not handled")
    return found


def _strings(message: bytes, number: int) -> list[str]:
    return [v.decode() for n, v in _fields(message) if n == number and isinstance(v, bytes)]


def _namespace_from_protobuf(body: bytes) -> dict[str, Any]:
    """The JSON form of a ``k8s\\x00``-framed v1 Namespace (metadata name, labels, annotations)."""
    unknown = dict(_fields(body.removeprefix(b"k8s\0")))
    type_meta, raw = unknown.get(1), unknown.get(2)
    if not isinstance(type_meta, bytes) or not isinstance(raw, bytes) or \
            _strings(type_meta, 2) != ["Namespace"]:
        raise kmock.KubernetesError(415, "UnsupportedMediaType",
                                    "only Namespaces are understood in protobuf here")
    meta = next((v for n, v in _fields(raw) if n == 1 and isinstance(v, bytes)), b"")
    result: dict[str, Any] = {"name": (_strings(meta, 1) or [""])[0]}
    for number, key in ((11, "labels"), (12, "annotations")):
        entries = [v for n, v in _fields(meta) if n == number and isinstance(v, bytes)]
        if entries:
            result[key] = {(_strings(e, 1) or [""])[0]: (_strings(e, 2) or [""])[0]
                           for e in entries}
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": result}


def _openapi_v2() -> bytes:
    """An OpenAPI v2 ``Document`` protobuf: swagger "2.0", info, nothing else."""
    def field(number: int, payload: bytes) -> bytes:
        return bytes([number << 3 | 2, len(payload)]) + payload

    return field(1, b"2.0") + field(2, field(1, b"Kubernetes") + field(2, b"v1.32.0"))


class KubectlKubernetes(EdgeKubernetes):
    """:class:`EdgeKubernetes` plus what kubectl needs (see the module docstring)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._served: set[kmock.resource] = set()
        self.writes = 0
        self.fallback["get /openapi/v2"] << (lambda: _openapi_v2())
        self.fallback["get /openapi/v3"] << self._openapi_root
        self.fallback["get", re.compile(r"/openapi/v3/.+")] << self._openapi_group_version

    # 2. /api/v1/namespaces[/<name>] as Namespace objects: kubectl get|create namespace
    async def __call__(self, raw_request: aiohttp.web.BaseRequest) -> aiohttp.web.StreamResponse:
        match = _NAMESPACES_PATH.fullmatch(raw_request.path)
        if match is None:
            return await super().__call__(raw_request)
        body = await raw_request.read()
        try:
            data = json.loads(body) if body else None
        except ValueError:
            data = None
        name, subresource = match.groups()
        method = raw_request.method.upper()
        watch = raw_request.query.get("watch") == "true"
        action = (kmock.action.WATCH if method == "GET" and watch else
                  {"GET": kmock.action.LIST, "POST": kmock.action.CREATE}.get(method)
                  if name is None else
                  {"GET": kmock.action.FETCH, "PATCH": kmock.action.UPDATE,
                   "DELETE": kmock.action.DELETE}.get(method))
        request = kmock.Request(
            id=len(self._requests), raw_request=raw_request, url=raw_request.url,
            method=method, params=dict(raw_request.query), headers=dict(raw_request.headers),
            body=body, text=body.decode("utf-8", "replace"), data=data, action=action,
            resource=NAMESPACES, namespace=None, name=name, subresource=subresource)
        self._requests.append(request)
        try:
            return await self._handle(request)
        except Exception as exc:  # rendered as kmock renders errors
            return await self._render_error(exc)

    async def _handle(self, request: kmock.Request) -> aiohttp.web.StreamResponse:
        # 7. JSON watch streams with selectors and timeouts: kubectl wait
        if request.resource is not None and request.action == kmock.action.WATCH:
            return await self._watch(request)
        # 12. protobuf Namespace bodies: kubectl create namespace
        if "protobuf" in header(request, "Content-Type"):
            if request.resource != NAMESPACES or request.action != kmock.action.CREATE:
                raise kmock.KubernetesError(415, "UnsupportedMediaType",
                                            "only Namespaces are understood in protobuf here")
            object.__setattr__(request, "data", _namespace_from_protobuf(request.body))
        # 10. strategic merge patches without directives: kubectl rollout restart, apply
        if (request.method == kmock.method.PATCH and isinstance(request.data, dict)
                and "strategic-merge-patch" in header(request, "Content-Type")):
            object.__setattr__(request, "data", _without_directives(request.data))
        if request.method in (kmock.method.POST, kmock.method.PATCH, kmock.method.DELETE):
            self.writes += 1
        try:
            return await super()._handle(request)
        # 4. the API server's NotFound / AlreadyExists: kubectl's messages, apply's create
        except kmock.KubernetesObjectNotFoundError:
            name = request.name or ((request.data or {}).get("metadata") or {}).get("name")
            raise self._error(404, "NotFound", request.resource, name) from None
        except kmock.KubernetesError as exc:
            if exc.status != 409 or exc.reason == "AlreadyExists":
                raise
            name = ((request.data or {}).get("metadata") or {}).get("name")
            raise self._error(409, "AlreadyExists", request.resource, name) from None

    @staticmethod
    def _error(status: int, reason: str, resource: kmock.resource | None,
               name: str | None) -> kmock.KubernetesError:
        what = _resource_name(resource) if resource is not None else "object"
        words = "not found" if status == 404 else "already exists"
        return kmock.KubernetesError(
            status, reason, f'{what} "{name}" {words}',
            {"name": name, "group": resource.group if resource else "",
             "kind": resource.plural if resource else ""})

    def _admit(self, resource: kmock.resource, body: dict[str, Any]) -> None:
        # 3. NamespaceLifecycle: kubectl apply into a namespace not created yet fails
        namespace = (body.get("metadata") or {}).get("namespace")
        if namespace and resource != NAMESPACES:
            key = (NAMESPACES, None, namespace)
            if key not in self._objects or self._objects[key].deleted:
                raise self._error(404, "NotFound", NAMESPACES, namespace)
        # 9. stringData into data: kubectl apply --server-side -f credentials.yaml
        if resource == SECRETS and "stringData" in body:
            data = body.setdefault("data", {}) or {}
            for key, value in (body.pop("stringData") or {}).items():
                data[key] = base64.b64encode(str(value).encode()).decode()
            body["data"] = data

    # 5, 6. typed lists, field selectors: kubectl get, kubectl wait
    async def _serve_list(self, request: kmock.Request) -> dict[str, Any]:
        listing = await super()._serve_list(request)
        fields = request.params.get("fieldSelector")
        if fields:
            listing["items"] = [i for i in listing["items"] if _fields_selected(i, fields)]
        assert request.resource is not None
        info = self._resources[request.resource]
        kind = info.kind or str(request.resource.plural).capitalize()
        group_version = "/".join(filter(None, (request.resource.group,
                                               request.resource.version)))
        return {"apiVersion": group_version, "kind": f"{kind}List",
                **listing, "metadata": {"resourceVersion": str(self.writes + 1)}}

    async def _watch(self, request: kmock.Request) -> aiohttp.web.StreamResponse:
        fields = request.params.get("fieldSelector") or ""
        labels = request.params.get("labelSelector") or ""
        timeout = float(request.params.get("timeoutSeconds") or 0) or None
        response = aiohttp.web.StreamResponse(headers={"Content-Type": "application/json"})
        await response.prepare(request._raw_request)  # type: ignore[arg-type]
        try:
            async with asyncio.timeout(timeout):
                async for event in self._serve_watch(request):
                    obj = event.get("object") if isinstance(event, dict) else None
                    if not isinstance(obj, dict) or not _fields_selected(obj, fields) or \
                            not labels_selected((obj.get("metadata") or {}).get("labels") or {},
                                                labels):
                        continue
                    await response.write(json.dumps(event).encode() + b"\n")
        except (TimeoutError, ConnectionResetError):
            pass
        return response

    # 8. CRDs serve their versions: kubectl apply -f self-link.yaml, kubectl wait kustomization
    def _get_resources(self) -> list[kmock.resource]:
        self._serve_crds()
        return super()._get_resources()

    def _serve_crds(self) -> None:
        """Declare the resources of every live CRD's served versions; forget the others."""
        served: dict[kmock.resource, kmock.ResourceInfo] = {}
        for (resource, _, _), obj in list(self._objects.items()):
            if resource != CRDS or obj.deleted:
                continue
            spec = obj.raw.get("spec") or {}
            names = spec.get("names") or {}
            for version in spec.get("versions") or []:
                if not version.get("served"):
                    continue
                key = kmock.resource(spec.get("group"), version.get("name"), names.get("plural"))
                served[key] = kmock.ResourceInfo(
                    kind=names.get("kind"), singular=names.get("singular"),
                    namespaced=spec.get("scope") == "Namespaced",
                    shortnames=set(names.get("shortNames") or ()),
                    categories=set(names.get("categories") or ()),
                    subresources=set((version.get("subresources") or {}).keys()),
                    verbs={"get", "list", "watch", "create", "update", "patch", "delete",
                           "deletecollection"})
        for gone in self._served - served.keys():
            del self._resources[gone]
        for key, info in served.items():
            self._resources[key] = info
        self._served = set(served)

    def _group_versions(self) -> dict[str, list[str]]:
        """Group → versions, preferred first (core excluded)."""
        groups: dict[str, set[str]] = {}
        for resource in self._get_resources():
            if resource.group and resource.version:
                groups.setdefault(resource.group, set()).add(resource.version)
        return {group: sorted(versions, key=version_priority)
                for group, versions in sorted(groups.items())}

    # 1. preferred versions by priority, core groupVersion "v1": kubectl get nodes, wait
    @staticmethod
    def _group(name: str, versions: list[str]) -> dict[str, Any]:
        entries = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
        return {"name": name, "versions": entries, "preferredVersion": entries[0]}

    async def _serve_apis(self, request: kmock.Request) -> dict[str, Any]:
        return {"apiVersion": "v1", "kind": "APIGroupList",
                "groups": [self._group(g, vs) for g, vs in self._group_versions().items()]}

    async def _serve_group(self, request: kmock.Request) -> dict[str, Any]:
        assert request.resource is not None
        versions = self._group_versions().get(str(request.resource.group))
        if not versions:
            raise kmock.KubernetesError(404, "NotFound", "the server could not find the group")
        return {"apiVersion": "v1", "kind": "APIGroup",
                **self._group(str(request.resource.group), versions)}

    async def _serve_version(self, request: kmock.Request) -> dict[str, Any]:
        listing = await super()._serve_version(request)
        assert request.resource is not None
        group, version = request.resource.group, request.resource.version
        listing["groupVersion"] = f"{group}/{version}" if group else str(version)
        for entry in listing["resources"]:
            if "/" in entry["name"]:
                entry["shortNames"], entry["categories"] = [], []
                entry["verbs"] = ["get", "patch", "update"]
        return listing

    # 11. OpenAPI documents declaring fieldValidation: kubectl apply (validate=strict)
    def _resources_by_group_version(self) -> dict[str, list[kmock.resource]]:
        found: dict[str, list[kmock.resource]] = {}
        for resource in self._get_resources():
            if resource.version and resource.plural and resource.group is not None:
                path = (f"apis/{resource.group}/{resource.version}" if resource.group
                        else f"api/{resource.version}")
                found.setdefault(path, []).append(resource)
        return found

    async def _openapi_root(self) -> dict[str, Any]:
        return {"paths": {path: {"serverRelativeURL": f"/openapi/v3/{path}?hash=0"}
                          for path in self._resources_by_group_version()}}

    async def _openapi_group_version(self, request: kmock.Request) -> dict[str, Any]:
        path = request.url.path.removeprefix("/openapi/v3/")
        resources = self._resources_by_group_version().get(path)
        if resources is None:
            raise kmock.KubernetesError(404, "NotFound", f"no OpenAPI document for {path}")
        validation = {"name": "fieldValidation", "in": "query", "schema": {"type": "string"}}
        paths: dict[str, Any] = {}
        for resource in resources:
            info = self._resources[resource]
            where = "/namespaces/{namespace}" if info.namespaced else ""
            gvk = {"group": resource.group, "version": resource.version,
                   "kind": info.kind or str(resource.plural).capitalize()}
            paths[f"/{path}{where}/{resource.plural}/{{name}}"] = {"patch": {
                "parameters": [validation], "x-kubernetes-group-version-kind": gvk,
                "responses": {"200": {"description": "OK"}}}}
        return {"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": "v1.32.0"},
                "paths": paths, "components": {"schemas": {}}}
