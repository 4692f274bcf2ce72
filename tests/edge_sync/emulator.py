"""A Kubernetes API for Edge Sync's tests: kmock's emulator (pinned, 0.8) plus additions.

:class:`EdgeKubernetes` runs on a private event loop in a daemon thread
(:class:`KubeHarness`), behind a TCP relay that tests can cut to simulate an API server
outage. The agent talks to the relay; tests mutate objects through :meth:`KubeHarness.api`
(a direct connection, so mutations also work during an outage and produce watch events).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import threading
from collections.abc import Callable, Iterator
from typing import Any

import aiohttp.web
import kmock
import yaml
from kubernetes import client

HELM_RELEASES = "helm.toolkit.fluxcd.io/v2/helmreleases"
GIT_REPOSITORIES = "source.toolkit.fluxcd.io/v1/gitrepositories"
KUSTOMIZATIONS = "kustomize.toolkit.fluxcd.io/v1/kustomizations"
SEALED_SECRETS = "bitnami.com/v1alpha1/sealedsecrets"
SERVICES = "v1/services"
SECRETS = "v1/secrets"


def _header(request: kmock.Request, name: str) -> str:
    for key, value in request.headers.items():
        if key.lower() == name.lower():
            return value
    return ""


def _selected(labels: dict[str, str], selector: str) -> bool:
    """Equality- and set-based (existence only) label selector matching."""
    for term in filter(None, (t.strip() for t in selector.split(","))):
        if "!=" in term:
            key, value = (s.strip() for s in term.split("!=", 1))
            if labels.get(key) == value:
                return False
        elif "=" in term:
            key, value = (s.strip() for s in term.replace("==", "=").split("=", 1))
            if labels.get(key) != value:
                return False
        elif term.startswith("!"):
            if term[1:] in labels:
                return False
        elif term not in labels:
            return False
    return True


class EdgeKubernetes(kmock.KubernetesEmulator):
    """kmock's stateful emulator plus the API server behaviour Edge Sync relies on.

    Each addition exists because kmock 0.8 lacks it (reference: kmock's own README and
    our notes on it):

    1. **Namespace from the URL.** A namespaced create stores ``metadata.namespace`` from
       the URL; kmock keeps the body as sent, so namespaced lists and watches (which match
       the object's own namespace) would miss objects created without it.
    2. **Server-side apply.** ``PATCH`` with ``application/apply-patch+yaml`` parses the
       body as YAML (JSON is YAML; kmock does not parse YAML bodies), creates a missing
       object (kmock answers 404) and otherwise replaces the object with the applied
       configuration, keeping ``status``: what SSA does when one field manager owns every
       field and applies with ``force``. The manager is recorded in
       ``metadata.managedFields``, and ``fieldManager`` is required (as the API server
       requires it for apply).
    3. **Label selectors** on lists (``k=v``, ``k==v``, ``k!=v``, ``k``, ``!k``, comma =
       AND); kmock ignores them.
    4. **Service proxy.** ``GET /api/v1/namespaces/<ns>/services/<[scheme:]name[:port]>/
       proxy/<path>`` answers ``proxied[(ns, name, path)]``; 404 if the Service does not
       exist, 503 if nothing is registered (the API server with no ready endpoints).
    5. **Fault injection.** ``failing`` maps ``(method, resource)`` (e.g.
       ``("PATCH", HELM_RELEASES)``) to an HTTP status every such request gets.
    6. **List pagination.** ``limit`` cuts a list to that many items (sorted by namespace
       and name) and ``metadata.continue`` carries the offset of the next page; kmock
       ignores both and answers everything at once. Unlike the API server's, the pages are
       not one snapshot: an object created or deleted between pages may shift them.

    :meth:`_admit` sees every body about to be created or applied; subclasses (the kubectl
    emulator of tests/bootstrap) check or complete it there.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.proxied: dict[tuple[str, str, str], bytes] = {}
        self.failing: dict[tuple[str, str], int] = {}

    async def _handle(self, request: kmock.Request) -> aiohttp.web.StreamResponse:
        if request.resource is not None:
            fault = self._fault(request)
            if fault is not None:
                return fault
            if (request.action == kmock.action.CREATE and request.namespace
                    and isinstance(request.data, dict)):
                request.data.setdefault("metadata", {})["namespace"] = request.namespace
            if request.action == kmock.action.CREATE and isinstance(request.data, dict):
                self._admit(request.resource, request.data)
            if (request.method == kmock.method.PATCH and request.name
                    and not request.subresource
                    and "apply-patch" in _header(request, "Content-Type")):
                return await self._apply(request)
            if (request.action == kmock.action.FETCH and request.subresource
                    and request.subresource.split("/")[0] == "proxy"
                    and request.resource.plural == "services"):
                return await self._proxy(request)
        return await super()._handle(request)

    def _admit(self, resource: kmock.resource, body: dict[str, Any]) -> None:
        """Check or complete an object about to be created or applied (a subclass hook)."""

    def _fault(self, request: kmock.Request) -> aiohttp.web.StreamResponse | None:
        for (method, resource), status in self.failing.items():
            if request.method == method and request.resource == kmock.resource(resource):
                return aiohttp.web.json_response(
                    {"apiVersion": "v1", "kind": "Status", "status": "Failure",
                     "code": status, "reason": "InjectedFault", "message": "injected fault"},
                    status=status)
        return None

    async def _apply(self, request: kmock.Request) -> aiohttp.web.StreamResponse:
        manager = request.params.get("fieldManager")
        if not manager:
            raise kmock.KubernetesError(422, "Invalid", "fieldManager is required for apply")
        try:
            applied = yaml.safe_load(request.text)
        except yaml.YAMLError as exc:
            raise kmock.KubernetesError(400, "BadRequest", f"invalid YAML: {exc}") from None
        if not isinstance(applied, dict):
            raise kmock.KubernetesError(400, "BadRequest", "apply body is not an object")
        meta = applied.setdefault("metadata", {})
        if meta.get("name", request.name) != request.name:
            raise kmock.KubernetesError(400, "BadRequest", "name does not match the URL")
        meta["name"] = request.name
        if request.namespace:
            meta["namespace"] = request.namespace
        meta["managedFields"] = [{"manager": manager, "operation": "Apply"}]
        self._admit(request.resource, applied)
        key = (request.resource, request.namespace, request.name)
        async with self._lock:
            try:
                existing = self._objects[key]
            except KeyError:
                existing = None
            if existing is None or existing.deleted:
                if existing is None:
                    self._objects[key] = applied
                else:
                    existing.create(applied)
                kind = "ADDED"
            else:
                if "status" in existing.raw:
                    applied["status"] = copy.deepcopy(existing.raw["status"])
                existing.create(applied)
                kind = "MODIFIED"
            raw = self._objects[key].raw
            await self._buses[request.resource].put({"type": kind, "object": raw})
        return aiohttp.web.json_response(raw, status=201 if kind == "ADDED" else 200)

    async def _proxy(self, request: kmock.Request) -> aiohttp.web.StreamResponse:
        parts = str(request.name).split(":")
        service = parts[1] if len(parts) == 3 else parts[0]
        path = str(request.subresource).split("/", 1)[1] if "/" in str(request.subresource) else ""
        key = (request.resource, request.namespace, service)
        async with self._lock:
            exists = key in self._objects and not self._objects[key].deleted
        if not exists:
            raise kmock.KubernetesObjectNotFoundError()
        body = self.proxied.get((str(request.namespace), service, path))
        if body is None:
            raise kmock.KubernetesError(503, "ServiceUnavailable",
                                        f'no endpoints available for service "{service}"')
        return aiohttp.web.Response(body=body, content_type="application/x-pem-file")

    async def _serve_list(self, request: kmock.Request) -> dict[str, Any]:
        listing = await super()._serve_list(request)
        selector = request.params.get("labelSelector")
        if selector:
            listing["items"] = [
                item for item in listing["items"]
                if _selected((item.get("metadata") or {}).get("labels") or {}, selector)]
        limit = request.params.get("limit")
        if limit:
            return self._page(listing, limit, request.params.get("continue") or "0")
        return listing

    @staticmethod
    def _page(listing: dict[str, Any], limit: str, token: str) -> dict[str, Any]:
        """One page of a list: ``limit`` items from the offset ``token`` (see addition 6)."""
        if not (limit.isdigit() and token.isdigit()) or int(limit) < 1:
            raise kmock.KubernetesError(400, "BadRequest", "invalid limit or continue")
        start, size = int(token), int(limit)

        def key(item: dict[str, Any]) -> tuple[str, str]:
            meta = item.get("metadata") or {}
            return str(meta.get("namespace") or ""), str(meta.get("name") or "")

        items = sorted(listing["items"], key=key)
        listing["items"] = items[start:start + size]
        if start + size < len(items):
            listing["metadata"] = {**listing.get("metadata", {}), "continue": str(start + size),
                                   "remainingItemCount": len(items) - start - size}
        return listing


class _Relay:
    """A TCP relay in front of the emulator that can be cut and restored (an outage)."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.port = 0
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()

    async def open(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", self.port,
                                                  reuse_address=True)
        self.port = self._server.sockets[0].getsockname()[1]

    async def cut(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None
        for writer in list(self._writers):
            writer.transport.abort()
        self._writers.clear()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        except OSError:
            writer.transport.abort()
            return
        self._writers |= {writer, up_writer}

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            try:
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            except (ConnectionError, asyncio.CancelledError):
                pass
            finally:
                dst.transport.abort()
                self._writers.discard(dst)

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))


class KubeHarness:
    """Runs :class:`EdgeKubernetes` in a daemon thread; see the module docstring."""

    def __init__(self, emulator: EdgeKubernetes | None = None, *,
                 flux_resources: bool = True) -> None:
        """``flux_resources``: serve HelmReleases, GitRepositories, Kustomizations and
        SealedSecrets without their CRDs."""
        self.emulator = emulator if emulator is not None else EdgeKubernetes()
        self.emulator.resources.load_bundled()
        flux = ((HELM_RELEASES, "HelmRelease"), (GIT_REPOSITORIES, "GitRepository"),
                (KUSTOMIZATIONS, "Kustomization"), (SEALED_SECRETS, "SealedSecret"))
        for key, kind in flux if flux_resources else ():
            self.emulator.resources[key] = kmock.ResourceInfo(
                kind=kind, singular=kind.lower(), namespaced=True, subresources={"status"},
                verbs={"get", "list", "watch", "create", "update", "patch", "delete"})
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._done: asyncio.Event | None = None
        self._relay: _Relay | None = None
        self.direct_port = 0
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._main, name="kmock", daemon=True)
        self._thread.start()
        if not self._ready.wait(30) or self._error is not None:
            raise RuntimeError(f"the Kubernetes emulator did not start: {self._error}")

    def _main(self) -> None:
        async def serve() -> None:
            self._loop, self._done = asyncio.get_running_loop(), asyncio.Event()
            async with self.emulator, kmock.Server(self.emulator) as server:
                self.direct_port = server.port
                self._relay = _Relay(server.port)
                await self._relay.open()
                self._ready.set()
                await self._done.wait()
                await self._relay.cut()

        try:
            asyncio.run(serve())
        except BaseException as exc:  # reported to the constructor
            self._error = exc
            self._ready.set()

    @property
    def url(self) -> str:
        """The API server as the agent sees it (through the relay)."""
        assert self._relay is not None
        return f"http://127.0.0.1:{self._relay.port}"

    def api(self) -> client.ApiClient:
        """A client connected directly to the emulator (not through the relay)."""
        cfg = client.Configuration()
        cfg.host = f"http://127.0.0.1:{self.direct_port}"
        return client.ApiClient(cfg)

    def call(self, fn: Callable[[], Any]) -> Any:
        """Run ``fn`` on the emulator's loop (safe access to its state)."""
        assert self._loop is not None

        async def run() -> Any:
            return fn()

        return asyncio.run_coroutine_threadsafe(run(), self._loop).result(10)

    def objects(self, resource: str, namespace: str | None = None,
                view: Callable[[dict[str, Any]], Any] | None = None) -> dict[str, Any]:
        """Live objects of a resource (in a namespace), by name, as deep copies; with ``view``,
        deep copies of ``view(object)`` only (a poller that needs a few fields of large
        objects, such as CRDs with their schemas, then copies only those)."""
        wanted = kmock.resource(resource)

        def collect() -> dict[str, Any]:
            return {name: copy.deepcopy(view(obj.raw) if view is not None else obj.raw)
                    for (res, ns, name), obj in self.emulator.objects.items()
                    if res == wanted and not obj.deleted
                    and (namespace is None or ns == namespace)}

        return self.call(collect)

    def requests(self, contains: str = "") -> list[kmock.Request]:
        """Requests served so far whose path (and query) contains ``contains``."""
        return self.call(lambda: [r for r in self.emulator if contains in str(r.url.path_qs)])

    def put(self, resource: str, namespace: str | None, name: str,
            body: dict[str, Any]) -> None:
        """Store an object directly (no watch event), e.g. a preexisting one."""
        def store() -> None:
            self.emulator.objects[resource, namespace, name] = copy.deepcopy(body)
        self.call(store)

    @contextlib.contextmanager
    def outage(self) -> Iterator[None]:
        """Cut every connection through the relay and refuse new ones, then restore."""
        assert self._loop is not None and self._relay is not None
        asyncio.run_coroutine_threadsafe(self._relay.cut(), self._loop).result(10)
        try:
            yield
        finally:
            asyncio.run_coroutine_threadsafe(self._relay.open(), self._loop).result(10)

    def close(self) -> None:
        if self._loop is not None and self._done is not None:
            self._loop.call_soon_threadsafe(self._done.set)
        self._thread.join(10)
