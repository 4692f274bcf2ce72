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
from typing import Protocol, TypedDict, cast

import urllib3
from kubernetes import client, config, watch
from kubernetes.client.exceptions import ApiException

from fplus.jsontypes import as_list, as_object, is_object, text

log = logging.getLogger(__name__)

KUBE_ERRORS: tuple[type[BaseException], ...] = (ApiException, urllib3.exceptions.HTTPError,
                                                OSError)
"""What a failed Kubernetes call raises: an error answer, or no (complete) answer at all."""
KUBE_OR_JSON_ERRORS: tuple[type[BaseException], ...] = (*KUBE_ERRORS, ValueError)
""":data:`KUBE_ERRORS`, or an answer that is not the JSON expected (a named tuple: mypy does
not follow ``except (*KUBE_ERRORS, ValueError)``)."""

APPLY_PATCH = "application/apply-patch+yaml"

KubeObject = dict[str, object]
"""A Kubernetes object as JSON, read field by field with :mod:`fplus.jsontypes`."""


class NodeEvent(TypedDict):
    """One event of a Node watch: ``ADDED``, ``MODIFIED``, ``DELETED`` or ``BOOKMARK``."""

    type: object
    object: KubeObject


class _Raw(Protocol):
    """An answer read with ``_preload_content=False``: the urllib3 response, not the model
    the client's annotations name."""

    data: bytes

    def release_conn(self) -> None: ...


def api_client(kubeconfig: str | None = None) -> client.ApiClient:
    """In-cluster configuration inside a pod, else the kubeconfig (``KUBECONFIG``)."""
    cfg = client.Configuration()
    if kubeconfig is None and os.environ.get("KUBERNETES_SERVICE_HOST"):
        config.load_incluster_config(  # type: ignore[no-untyped-call]
            client_configuration=cfg)
    else:
        config.load_kube_config(  # type: ignore[no-untyped-call]
            config_file=kubeconfig, client_configuration=cfg)
    return client.ApiClient(cfg)


def kubeconfig_namespace(kubeconfig: str | None = None) -> str | None:
    """The namespace of the kubeconfig's current context, if it names one."""
    try:
        _, current = config.list_kube_config_contexts(  # type: ignore[no-untyped-call]
            config_file=kubeconfig)
    except (config.ConfigException, OSError):
        return None
    return text(as_object(as_object(current).get("context")), "namespace")


def split_api_version(api_version: str) -> tuple[str, str]:
    """``group/version`` → ``(group, version)``; core ``v1`` → ``("", "v1")``."""
    group, _, version = api_version.rpartition("/")
    return group, version


def _json(answer: object) -> object:
    resp = cast(_Raw, answer)
    try:
        return json.loads(resp.data or b"null")
    finally:
        resp.release_conn()


def _object(resp: object) -> KubeObject:
    """The answer, which must be a JSON object (ValueError otherwise)."""
    body = _json(resp)
    if not is_object(body):
        raise ValueError("a Kubernetes answer that is not a JSON object")
    return body


def _items(resp: object) -> list[KubeObject]:
    """The objects of a list answer (its ``items``)."""
    return [item for item in as_list(_object(resp).get("items")) if is_object(item)]


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
            w.stop()  # type: ignore[no-untyped-call]
        self.api.close()  # type: ignore[no-untyped-call]

    # -- nodes --------------------------------------------------------------------------
    def list_nodes(self) -> tuple[list[KubeObject], str | None]:
        """Every Node and the list's resourceVersion."""
        body = _object(self.core.list_node(_preload_content=False,
                                           _request_timeout=self.timeout))
        items = [item for item in as_list(body.get("items")) if is_object(item)]
        return items, text(as_object(body.get("metadata")), "resourceVersion")

    def watch_nodes(self, resource_version: str | None,
                    timeout: float) -> Iterator[NodeEvent]:
        """Node events (``{"type", "object"}``, objects as JSON) until the stream ends.

        The server ends it after ``timeout`` seconds; if it does not (a proxy holding the
        stream, an emulator ignoring ``timeoutSeconds``), the client gives up after a
        little longer without a byte (a ``ReadTimeoutError``: callers treat it as the end
        of the stream).
        """
        w = watch.Watch(return_type="object")  # type: ignore[no-untyped-call]  # plain JSON
        idle = timeout + max(1.0, timeout / 10)
        kwargs: dict[str, object] = {"timeout_seconds": max(1, int(timeout)),
                                  "_request_timeout": (self.timeout, idle)}
        if resource_version:
            kwargs["resource_version"] = resource_version
            kwargs["allow_watch_bookmarks"] = True
        with self._lock:
            self._watches.add(w)
        try:
            for event in w.stream(  # type: ignore[no-untyped-call]
                    self.core.list_node, **kwargs):
                yield {"type": event.get("type"),
                       "object": as_object(event.get("raw_object"))}
        finally:
            with self._lock:
                self._watches.discard(w)

    # -- pods -----------------------------------------------------------------------------
    def list_pods(self, page: int = 500) -> Iterator[KubeObject]:
        """Every Pod in every namespace, fetched ``page`` at a time (``limit`` and
        ``continue``: the API server serves every page from the first one's snapshot, and
        no response holds more than ``page`` Pods)."""
        token: str | None = None
        while True:
            body = _object(self.core.list_pod_for_all_namespaces(  # no `continue` at first
                limit=page, _continue=token, _preload_content=False,
                _request_timeout=self.timeout))
            yield from (item for item in as_list(body.get("items")) if is_object(item))
            token = text(as_object(body.get("metadata")), "continue")
            if not token:
                return

    # -- services and secrets -----------------------------------------------------------
    def read_service(self, namespace: str, name: str) -> KubeObject:
        return _object(self.core.read_namespaced_service(
            name, namespace, _preload_content=False, _request_timeout=self.timeout))

    def proxy_get(self, namespace: str, service: str, path: str) -> bytes:
        """GET through the API server's service proxy (``services/<service>/proxy/<path>``)."""
        resp = cast(_Raw, self.core.connect_get_namespaced_service_proxy_with_path(
            service, namespace, path, _preload_content=False, _request_timeout=self.timeout))
        try:
            return bytes(resp.data)
        finally:
            resp.release_conn()

    def list_secrets(self, namespace: str, label_selector: str) -> list[KubeObject]:
        return _items(self.core.list_namespaced_secret(
            namespace, label_selector=label_selector, _preload_content=False,
            _request_timeout=self.timeout))

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
        found = as_object(_json(self.custom.get_api_resources(
            group, version, _preload_content=False, _request_timeout=self.timeout)))
        for res in as_list(found.get("resources")):
            if not is_object(res) or res.get("kind") != kind:
                continue
            name = text(res, "name")
            if name is not None and "/" not in name:  # not a subresource
                info = (name, bool(res.get("namespaced", True)))
                with self._lock:
                    self._plurals[key] = info
                return info
        raise ValueError(f"the API server does not serve {kind} in {api_version}")

    def list_objects(self, api_version: str, plural: str, namespace: str,
                     label_selector: str) -> list[KubeObject]:
        group, version = split_api_version(api_version)
        return _items(self.custom.list_namespaced_custom_object(
            group, version, namespace, plural, label_selector=label_selector,
            _preload_content=False, _request_timeout=self.timeout))

    def list_all(self, api_version: str, plural: str) -> list[KubeObject]:
        """Objects of a custom resource in every namespace."""
        group, version = split_api_version(api_version)
        return _items(self.custom.list_cluster_custom_object(
            group, version, plural, _preload_content=False, _request_timeout=self.timeout))

    def get_object(self, api_version: str, plural: str, namespace: str,
                   name: str) -> KubeObject | None:
        group, version = split_api_version(api_version)
        try:
            return _object(self.custom.get_namespaced_custom_object(
                group, version, namespace, plural, name, _preload_content=False,
                _request_timeout=self.timeout))
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise

    def apply(self, api_version: str, plural: str, namespace: str, manifest: KubeObject,
              field_manager: str) -> KubeObject:
        """Server-side apply (created if missing), taking over conflicting fields."""
        group, version = split_api_version(api_version)
        name = text(as_object(manifest.get("metadata")), "name")
        if not name:
            raise ValueError("a manifest without metadata.name")
        return _object(self.custom.patch_namespaced_custom_object(
            group, version, namespace, plural, name, manifest,
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
