"""A ``coordination.k8s.io/v1`` Lease through the ``kubernetes`` client.

Created if missing; taken or renewed by a replace carrying the ``resourceVersion`` read just
before (the API server's compare-and-swap: a 409 means someone else wrote first). As in
client-go, expiry is judged by this process's own clock: a lease whose record has not changed
for ``leaseDurationSeconds`` since this process first saw that record is expired, so clocks of
different machines are never compared. Bodies are plain JSON (MicroTime strings written as
the API server writes them).
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

SERVICE_ACCOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"


def micro_time(at: datetime | None = None) -> str:
    """A MicroTime (RFC 3339 with microseconds, UTC)."""
    return (at or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class KubernetesLease:
    """The Lease ``namespace/name``, held ``duration`` seconds (rounded up) per renewal."""

    def __init__(self, api: client.ApiClient, namespace: str, name: str = "cluster-manager",
                 duration: float = 10.0, *, timeout: float = 5.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        # Any: bodies are plain JSON and reads answer raw (_preload_content=False), neither
        # of which the client's annotations describe.
        self.leases: Any = client.CoordinationV1Api(api)
        self.namespace = namespace
        self.name = name
        self.duration = duration
        self.timeout = timeout
        self._clock = clock
        self._observed: tuple[Any, ...] | None = None
        self._observed_at = 0.0

    def _read(self) -> dict[str, Any] | None:
        try:
            resp = self.leases.read_namespaced_lease(self.name, self.namespace,
                                                     _preload_content=False,
                                                     _request_timeout=self.timeout)
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise
        return json.loads(resp.data)

    def _spec(self, identity: str, previous: dict[str, Any]) -> dict[str, Any]:
        now = micro_time()
        renewing = previous.get("holderIdentity") == identity
        transitions = int(previous.get("leaseTransitions") or 0)
        return {"holderIdentity": identity,
                "leaseDurationSeconds": max(1, math.ceil(self.duration)),
                "acquireTime": previous.get("acquireTime") if renewing else now,
                "renewTime": now,
                "leaseTransitions": transitions if renewing or not previous else
                transitions + 1}

    def acquire(self, identity: str) -> str | None:
        """See :meth:`fplus.cluster_manager.leader.lease.Lease.acquire`."""
        lease = self._read()
        if lease is None:
            body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                    "metadata": {"name": self.name, "namespace": self.namespace},
                    "spec": self._spec(identity, {})}
            try:
                self.leases.create_namespaced_lease(self.namespace, body,
                                                    _request_timeout=self.timeout)
            except ApiException as exc:
                if exc.status == 409:  # created by someone else just now
                    return None
                raise
            return identity
        spec = lease.get("spec") or {}
        holder = spec.get("holderIdentity") or None
        if holder != identity and not self._expired(lease):
            return holder
        lease["spec"] = self._spec(identity, spec)
        try:
            self.leases.replace_namespaced_lease(self.name, self.namespace, lease,
                                                 _request_timeout=self.timeout)
        except ApiException as exc:
            if exc.status == 409:  # written by someone else since we read it
                return holder
            raise
        return identity

    def _expired(self, lease: dict[str, Any]) -> bool:
        """No holder, or the same record seen for its whole duration by our clock."""
        spec = lease.get("spec") or {}
        if not spec.get("holderIdentity"):
            return True
        record = (spec.get("holderIdentity"), spec.get("renewTime"),
                  spec.get("leaseTransitions"), (lease.get("metadata") or {}).get(
                      "resourceVersion"))
        now = self._clock()
        if record != self._observed:
            self._observed, self._observed_at = record, now
        seconds = spec.get("leaseDurationSeconds") or self.duration
        return now >= self._observed_at + float(seconds)

    def release(self, identity: str) -> None:
        """See :meth:`fplus.cluster_manager.leader.lease.Lease.release`."""
        lease = self._read()
        spec = (lease or {}).get("spec") or {}
        if lease is None or spec.get("holderIdentity") != identity:
            return
        spec.update(holderIdentity=None, leaseDurationSeconds=1, renewTime=micro_time())
        try:
            self.leases.replace_namespaced_lease(self.name, self.namespace, lease,
                                                 _request_timeout=self.timeout)
        except ApiException as exc:
            if exc.status != 409:  # 409: someone took it meanwhile
                raise


def in_cluster() -> bool:
    """Running in a Kubernetes pod with a service account token."""
    return bool(os.environ.get("KUBERNETES_SERVICE_HOST")) and \
        os.path.isfile(f"{SERVICE_ACCOUNT}/token")


def pod_namespace(default: str = "default") -> str:
    """The pod's namespace (from its service account), else ``default``."""
    try:
        with open(f"{SERVICE_ACCOUNT}/namespace") as f:
            return f.read().strip() or default
    except OSError:
        return default


def api_client() -> client.ApiClient:
    """A client configured in-cluster, else from the kubeconfig (``KUBECONFIG``)."""
    from kubernetes import config

    if in_cluster():
        config.load_incluster_config()
    else:
        config.load_kube_config()
    return client.ApiClient()
