"""The Kubernetes calls Edge Sync makes, through the official client, as plain JSON.

Responses are read raw (``_preload_content=False``) and parsed as JSON rather than into the
client's typed models: Edge Sync needs a handful of fields and must not fail on objects the
models would reject. Every call carries a request timeout, so a hung API server cannot
block a loop for ever.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Iterator
from typing import Any

import urllib3
from kubernetes import client, config, watch
from kubernetes.client.exceptions import ApiException

log = logging.getLogger(__name__)

KUBE_ERRORS: tuple[type[BaseException], ...] = (ApiException, urllib3.exceptions.HTTPError,
                                                OSError)
"""What a failed Kubernetes call raises: an error answer, or no (complete) answer at all."""
KUBE_OR_JSON_ERRORS: tuple[type[BaseException], ...] = (*KUBE_ERRORS, ValueError)
""":data:`KUBE_ERRORS`, or an answer that is not the JSON expected (a named tuple: mypy does
not follow ``except (*KUBE_ERRORS, ValueError)``)."""

APPLY_PATCH = "application/apply-patch+yaml"


def api_client(kubeconfig: str | None = None) -> client.ApiClient:
    """In-cluster configuration inside a pod, else the kubeconfig (``KUBECONFIG``)."""
    cfg = client.Configuration()
    if kubeconfig is None and os.environ.get("KUBERNETES_SERVICE_HOST"):
        config.load_incluster_config(client_configuration=cfg)
    else:
        config.load_kube_config(config_file=kubeconfig, client_configuration=cfg)
    return client.ApiClient(cfg)


def kubeconfig_namespace(kubeconfig: str | None = None) -> str | None:
    """The namespace of the kubeconfig's current context, if it names one."""
    try:
        _, current = config.list_kube_config_contexts(config_file=kubeconfig)
    except (config.ConfigException, OSError):
        return None
    return (current or {}).get("context", {}).get("namespace")


def split_api_version(api_version: str) -> tuple[str, str]:
    """``group/version`` → ``(group, version)``; core ``v1`` → ``("", "v1")``."""
    group, _, version = api_version.rpartition("/")
    return group, version


def _json(resp: Any) -> Any:
    try:
        return json.loads(resp.data or b"null")
    finally:
        resp.release_conn()


def describe(exc: BaseException) -> str:
    """A one-line description of a failed call (never the response body)."""
    if isinstance(exc, ApiException):
        return f"Kubernetes API answered {exc.status} {exc.reason or ''}".strip()
    if isinstance(exc, ValueError):
        return "Kubernetes API answered something that is not JSON"
    return f"Kubernetes API unreachable: {type(exc).__name__}"


class Kube:
    """Thin, thread-safe wrapper over one :class:`kubernetes.client.ApiClient`."""

    def __init__(self, api: client.ApiClient, *, timeout: float = 30.0) -> None:
        self.api = api
        self.timeout = timeout
        self.core = client.CoreV1Api(api)
        self.custom = client.CustomObjectsApi(api)
        self._plurals: dict[tuple[str, str], tuple[str, bool]] = {}
        self._lock = threading.Lock()
        self._watches: set[watch.Watch] = set()

    def close(self) -> None:
        """Stop running watches and release connections."""
        with self._lock:
            watches = list(self._watches)
        for w in watches:
            w.stop()
        self.api.close()

    # -- nodes --------------------------------------------------------------------------
    def list_nodes(self) -> tuple[list[dict[str, Any]], str | None]:
        """Every Node and the list's resourceVersion."""
        body = _json(self.core.list_node(_preload_content=False,
                                         _request_timeout=self.timeout))
        return list(body.get("items") or []), (body.get("metadata") or {}).get("resourceVersion")

    def watch_nodes(self, resource_version: str | None,
                    timeout: float) -> Iterator[dict[str, Any]]:
        """Node events (``{"type", "object"}``, objects as JSON) until the stream ends.

        The server ends it after ``timeout`` seconds; if it does not (a proxy holding the
        stream, an emulator ignoring ``timeoutSeconds``), the client gives up after a
        little longer without a byte (a ``ReadTimeoutError``: callers treat it as the end
        of the stream).
        """
        w = watch.Watch(return_type="object")  # plain JSON, no model validation
        idle = timeout + max(1.0, timeout / 10)
        kwargs: dict[str, Any] = {"timeout_seconds": max(1, int(timeout)),
                                  "_request_timeout": (self.timeout, idle)}
        if resource_version:
            kwargs["resource_version"] = resource_version
            kwargs["allow_watch_bookmarks"] = True
        with self._lock:
            self._watches.add(w)
        try:
            for event in w.stream(self.core.list_node, **kwargs):
                yield {"type": event.get("type"), "object": event.get("raw_object") or {}}
        finally:
            with self._lock:
                self._watches.discard(w)

    # -- pods -----------------------------------------------------------------------------
    def list_pods(self, page: int = 500) -> Iterator[dict[str, Any]]:
        """Every Pod in every namespace, fetched ``page`` at a time (``limit`` and
        ``continue``: the API server serves every page from the first one's snapshot, and
        no response holds more than ``page`` Pods)."""
        token: str | None = None
        while True:
            kwargs: dict[str, Any] = {"limit": page}
            if token:
                kwargs["_continue"] = token
            body = _json(self.core.list_pod_for_all_namespaces(
                _preload_content=False, _request_timeout=self.timeout, **kwargs))
            if not isinstance(body, dict):
                raise ValueError("a pod list that is not an object")
            items, meta = body.get("items"), body.get("metadata")
            if isinstance(items, list):
                yield from (item for item in items if isinstance(item, dict))
            token = meta.get("continue") if isinstance(meta, dict) else None
            if not token or not isinstance(token, str):
                return

    # -- services and secrets -----------------------------------------------------------
    def read_service(self, namespace: str, name: str) -> dict[str, Any]:
        return _json(self.core.read_namespaced_service(
            name, namespace, _preload_content=False, _request_timeout=self.timeout))

    def proxy_get(self, namespace: str, service: str, path: str) -> bytes:
        """GET through the API server's service proxy (``services/<service>/proxy/<path>``)."""
        resp: Any = self.core.connect_get_namespaced_service_proxy_with_path(  # raw: urllib3
            service, namespace, path, _preload_content=False, _request_timeout=self.timeout)
        try:
            return resp.data
        finally:
            resp.release_conn()

    def list_secrets(self, namespace: str, label_selector: str) -> list[dict[str, Any]]:
        body = _json(self.core.list_namespaced_secret(
            namespace, label_selector=label_selector, _preload_content=False,
            _request_timeout=self.timeout))
        return list(body.get("items") or [])

    # -- custom resources (what deployments become) -------------------------------------
    def resource(self, api_version: str, kind: str) -> tuple[str, bool]:
        """``(plural, namespaced)`` of a custom resource kind, from API discovery (cached)."""
        key = (api_version, kind)
        with self._lock:
            if key in self._plurals:
                return self._plurals[key]
        group, version = split_api_version(api_version)
        if not group:
            raise ValueError(f"{kind} ({api_version}) is not a custom resource; Edge Sync "
                             "manages only kinds in a named API group")
        found = _json(self.custom.get_api_resources(group, version, _preload_content=False,
                                                    _request_timeout=self.timeout))
        for res in (found or {}).get("resources") or []:
            if res.get("kind") == kind and "/" not in res.get("name", "/"):
                info = (res["name"], bool(res.get("namespaced", True)))
                with self._lock:
                    self._plurals[key] = info
                return info
        raise ValueError(f"the API server does not serve {kind} in {api_version}")

    def list_objects(self, api_version: str, plural: str, namespace: str,
                     label_selector: str) -> list[dict[str, Any]]:
        group, version = split_api_version(api_version)
        body = _json(self.custom.list_namespaced_custom_object(
            group, version, namespace, plural, label_selector=label_selector,
            _preload_content=False, _request_timeout=self.timeout))
        return list(body.get("items") or [])

    def list_all(self, api_version: str, plural: str) -> list[dict[str, Any]]:
        """Objects of a custom resource in every namespace."""
        group, version = split_api_version(api_version)
        body = _json(self.custom.list_cluster_custom_object(
            group, version, plural, _preload_content=False, _request_timeout=self.timeout))
        return list(body.get("items") or [])

    def get_object(self, api_version: str, plural: str, namespace: str,
                   name: str) -> dict[str, Any] | None:
        group, version = split_api_version(api_version)
        try:
            return _json(self.custom.get_namespaced_custom_object(
                group, version, namespace, plural, name, _preload_content=False,
                _request_timeout=self.timeout))
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise

    def apply(self, api_version: str, plural: str, namespace: str, manifest: dict[str, Any],
              field_manager: str) -> dict[str, Any]:
        """Server-side apply (created if missing), taking over conflicting fields."""
        group, version = split_api_version(api_version)
        return _json(self.custom.patch_namespaced_custom_object(
            group, version, namespace, plural, manifest["metadata"]["name"], manifest,
            field_manager=field_manager, force=True, _content_type=APPLY_PATCH,
            _preload_content=False, _request_timeout=self.timeout))

    def delete(self, api_version: str, plural: str, namespace: str, name: str) -> None:
        """Delete an object; already gone is fine."""
        group, version = split_api_version(api_version)
        try:
            _json(self.custom.delete_namespaced_custom_object(
                group, version, namespace, plural, name, _preload_content=False,
                _request_timeout=self.timeout))
        except ApiException as exc:
            if exc.status != 404:
                raise
