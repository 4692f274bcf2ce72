"""A Kubernetes API for Lease tests: Edge Sync's kmock emulator (kmock 0.8, pinned) plus what
the real API server does and leader election depends on. Each is a gap of kmock 0.8:

1. **resourceVersion.** Every Lease written gets a new ``metadata.resourceVersion`` (kmock
   stores none).
2. **Compare-and-swap on replace.** ``PUT`` of a Lease whose ``metadata.resourceVersion`` is
   not the stored one answers ``409 Conflict`` (kmock accepts any body).
3. **Replace, not merge.** ``PUT`` stores the body as sent (kmock merge-patches it into the
   stored object, so a field set to null or left out would survive).
"""

from __future__ import annotations

import itertools
from typing import Any

import aiohttp.web
import kmock

from tests.edge_sync.emulator import EdgeKubernetes

LEASES = kmock.resource("coordination.k8s.io/v1/leases")


class LeaseKubernetes(EdgeKubernetes):
    """:class:`EdgeKubernetes` with Lease versions and compare-and-swap (see above)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._versions = itertools.count(1)

    async def _handle(self, request: kmock.Request) -> aiohttp.web.StreamResponse:
        if request.resource == LEASES and isinstance(request.data, dict):
            if request.action == kmock.action.CREATE:  # 1.
                request.data.setdefault("metadata", {})["resourceVersion"] = \
                    str(next(self._versions))
            elif request.method == kmock.method.PUT and request.name:
                return await self._replace(request)
        return await super()._handle(request)

    async def _replace(self, request: kmock.Request) -> aiohttp.web.StreamResponse:
        body = request.data
        key = (request.resource, request.namespace, request.name)
        async with self._lock:
            try:
                stored = self._objects[key]
            except KeyError:
                stored = None
            if stored is None or stored.deleted:
                raise kmock.KubernetesError(404, "NotFound",
                                            f'leases.coordination.k8s.io "{request.name}" '
                                            "not found")
            meta = body.setdefault("metadata", {})
            if meta.get("resourceVersion") != stored.raw["metadata"].get("resourceVersion"):
                raise kmock.KubernetesError(  # 2.
                    409, "Conflict", f'Operation cannot be fulfilled on leases.coordination.'
                    f'k8s.io "{request.name}": the object has been modified; please apply '
                    "your changes to the latest version and try again")
            meta.update(name=request.name, namespace=request.namespace,
                        resourceVersion=str(next(self._versions)))
            stored.create(body)  # 3.
            raw = stored.raw
            await self._buses[request.resource].put({"type": "MODIFIED", "object": raw})
        return aiohttp.web.json_response(raw)
