"""The Cluster Manager's HTTP API as ``fplus`` uses it; every refusal is an :class:`ApiError`
carrying the server's own message."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from urllib.parse import quote, urlsplit

import click
import requests

from fplus.jsontypes import is_object, strings, text

from .profile import Profile
from .transport import unreachable

UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
MANAGER = "the Cluster Manager"
MANAGER_URL = "the URL given to `fplus login` (or FPLUS_URL)"
SECRET_LIMIT = 1024 * 1024
"""The largest value ``secret seal`` sends: the Cluster Manager's default body limit."""

Row = dict[str, object]
"""A JSON object the API answered: printed whole (``-o json``) or read field by field with
:mod:`fplus.jsontypes` (a table's columns)."""
Params = Mapping[str, str]


class ApiError(Exception):
    """A refused or failed call: ``status`` (0 when the server was not reached) and a
    one-line message."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


WARNING_TEXT = re.compile(r'^\s*\d{3}\s+\S+\s+"((?:[^"\\]|\\.)*)"')
"""A ``Warning`` field (RFC 7234 §5.5: code, agent, quoted text, optional date): its text."""


def warning_texts(resp: requests.Response) -> list[str]:
    """The texts of the response's ``Warning`` header fields, each field on its own (their
    texts may hold commas, so the joined header cannot be split)."""
    getlist = getattr(getattr(resp.raw, "headers", None), "getlist", None)
    fields: list[str] = list(getlist("Warning")) if callable(getlist) else (
        [resp.headers["Warning"]] if "Warning" in resp.headers else [])
    texts = []
    for field in fields:
        found = WARNING_TEXT.match(field)
        texts.append(re.sub(r"\\(.)", r"\1", found.group(1)) if found else field.strip())
    return texts


def _object(resp: requests.Response) -> Row:
    """The JSON object a call answered; ApiError for any other body."""
    body: object = resp.json()
    if not is_object(body):
        raise ApiError(resp.status_code, f"{resp.url} answered no JSON object")
    return body


def rows(answer: Row, key: str) -> list[Row]:
    """The objects of the list ``answer[key]``; ApiError when it is no list."""
    found = answer.get(key)
    if not isinstance(found, list):
        raise ApiError(200, f"the answer holds no {key} list")
    return [row for row in found if is_object(row)]


class ManagerApi:
    """Calls to one Cluster Manager with the profile's credentials."""

    def __init__(self, profile: Profile, timeout: float = 30.0) -> None:
        self.profile = profile
        self.base = profile.url.rstrip("/")
        self._session = requests.Session()
        self._verify: str | bool = profile.ca_file or True
        """Passed with every request: a Session's own ``verify`` loses to
        ``REQUESTS_CA_BUNDLE`` in the environment, and the saved CA must not."""
        auth = profile.authorization()
        if auth:
            self._session.headers["Authorization"] = auth
        self._timeout = timeout
        self._warned: set[str] = set()
        self.names: dict[str, str] = {}
        """UUID to name of what :mod:`.refs` resolved: messages name both."""

    def _warn(self, resp: requests.Response) -> None:
        """Say each of the server's warnings on stderr, once per command."""
        for warning in warning_texts(resp):
            if warning not in self._warned:
                self._warned.add(warning)
                click.echo(f"fplus: warning: {warning}", err=True)

    def call(self, method: str, path: str, *, params: Params | None = None,
             json: object = None, data: bytes | str | None = None,
             headers: Mapping[str, str] | None = None) -> requests.Response:
        """One request (``json``: a body sent as JSON); ApiError unless it answered 2xx."""
        url = self.base + path
        try:
            resp = self._session.request(method, url, timeout=self._timeout,
                                         verify=self._verify, params=params, json=json,
                                         data=data, headers=headers)
        except requests.RequestException as exc:
            raise ApiError(0, unreachable(MANAGER, self.base, exc, MANAGER_URL)) from None
        self._warn(resp)
        if resp.status_code >= 400:
            raise ApiError(resp.status_code, self._message(resp))
        return resp

    def _message(self, resp: requests.Response) -> str:
        try:
            detail = resp.json().get("error")
        except (ValueError, AttributeError):
            detail = None
        detail = self.named(str(detail or resp.reason or f"HTTP {resp.status_code}"))
        if resp.status_code == 401:
            return (f"{self.base} refused the credentials ({detail}); "
                    "run `fplus login` (a saved session lasts as long as its token)")
        return str(detail)

    def named(self, message: str) -> str:
        """``message`` with each resolved cluster named by name and UUID, not UUID alone."""
        for uuid, name in self.names.items():
            message = message.replace(f"cluster {uuid}", f"cluster {name} ({uuid})")
        return message

    def call_object(self, method: str, path: str, *, params: Params | None = None,
                    json: object = None) -> Row:
        """One request whose answer is a JSON object (ApiError otherwise)."""
        return _object(self.call(method, path, params=params, json=json))

    # -- clusters ---------------------------------------------------------------------------

    def clusters(self, phase: str | None = None, selector: str | None = None, *,
                 sync: str | None = None, search: str | None = None
                 ) -> Iterator[Row]:
        """Every cluster the caller may see, in name order (only those in ``phase``, in sync
        state ``sync``, whose name holds ``search`` or whose uuid starts with it, and whose
        labels match ``selector``, a Kubernetes selector string, when given), page by page."""
        after = None
        while True:
            page = self.cluster_page(phase, selector, sync=sync, search=search, limit=1000,
                                     after=after)
            yield from rows(page, "clusters")
            after = text(page, "next")
            if not after:
                return

    def cluster_page(self, phase: str | None = None, selector: str | None = None, *,
                     sync: str | None = None, search: str | None = None, limit: int = 100,
                     after: str | None = None) -> Row:
        """One page of ``GET /v1/cluster?sort=name``: ``{clusters, next, counts, total}``
        (filters as :meth:`clusters`; ``after``: the ``next`` of the previous page)."""
        given = {"phase": phase, "selector": selector, "sync": sync, "search": search,
                 "after": after}
        params = {"sort": "name", "limit": str(limit),
                  **{k: v for k, v in given.items() if v is not None}}
        return self.call_object("GET", "/v1/cluster", params=params)

    def create(self, body: Row) -> Row:
        """``POST /v1/cluster``: the created cluster."""
        return self.call_object("POST", "/v1/cluster", json=body)

    def cluster(self, cluster: str) -> tuple[Row, str]:
        """``GET /v1/cluster/<c>``: its configuration (with labels and phase) and the
        configuration's ETag, for :meth:`edit`."""
        resp = self.call("GET", f"/v1/cluster/{cluster}")
        return _object(resp), resp.headers.get("ETag", "")

    def edit(self, cluster: str, patch: Mapping[str, object],
             etag: str | None) -> tuple[Row, str]:
        """``PATCH /v1/cluster/<c>`` with the merge-patch ``patch``, only onto the version
        ``etag`` names (ApiError 412 once anything else changed it); the new configuration
        and its ETag."""
        headers = {"Content-Type": "application/merge-patch+json",
                   **({"If-Match": etag} if etag else {})}
        resp = self.call("PATCH", f"/v1/cluster/{cluster}", data=json.dumps(patch),
                         headers=headers)
        return _object(resp), resp.headers.get("ETag", "")

    def status(self, cluster: str) -> Row:
        """The cluster's status with its derived phase."""
        return self.call_object("GET", f"/v1/cluster/{cluster}/status")

    def exists(self, cluster: str) -> bool:
        """Whether the cluster is still there (its status answers)."""
        try:
            self.status(cluster)
        except ApiError as exc:
            if exc.status == 404:
                return False
            raise
        return True

    def delete(self, cluster: str, force: bool = False) -> Row:
        """Start the teardown."""
        params = {"force": "true"} if force else {}
        return self.call_object("DELETE", f"/v1/cluster/{cluster}", params=params)

    def redeploy(self, cluster: str) -> Row:
        """Ask the reconciler to write the cluster's repo again."""
        return self.call_object("POST", f"/v1/cluster/{cluster}/redeploy")

    def approve_key(self, cluster: str, fingerprint: str) -> Row:
        """Pin the sealing key waiting for approval (it must be ``fingerprint``)."""
        return self.call_object("POST", f"/v1/cluster/{cluster}/sealing-key/approve",
                                json={"fingerprint": fingerprint})

    def bootstrap_url(self, cluster: str) -> str:
        """A one-time bootstrap URL (the answer is ACS's JSON string)."""
        return str(self.call("POST", f"/v1/cluster/{cluster}/bootstrap-url").json())

    def edge_ca(self) -> bytes | None:
        """The CA the Cluster Manager gives edges (PEM), fetched over this verified
        connection; None when edges trust their system CAs."""
        try:
            return self.call("GET", "/v1/edge-ca").content
        except ApiError as exc:
            if exc.status == 404:
                return None
            raise

    def fetch(self, url: str) -> bytes:
        """GET an absolute URL this server handed out (a bootstrap script)."""
        try:
            # JSON refusals (a shell client gets them as a script that prints and fails)
            resp = requests.get(url, timeout=self._timeout, verify=self._verify,
                                headers={"Accept": "application/json"})
        except requests.RequestException as exc:
            origin = "://".join(urlsplit(url)[:2])
            raise ApiError(0, unreachable("the bootstrap URL's server", origin, exc,
                                          "the Cluster Manager's external URL")) from None
        self._warn(resp)
        if resp.status_code >= 400:
            raise ApiError(resp.status_code, self._message(resp))
        return resp.content

    # -- deployments and charts -------------------------------------------------------------

    def deployments(self, cluster: str) -> list[Row]:
        """The cluster's Edge deployments."""
        return rows(self.call_object("GET", f"/v1/cluster/{cluster}/deployment"),
                    "deployments")

    def deployment(self, cluster: str, deployment: str) -> tuple[Row, str | None]:
        """One deployment and its ETag."""
        resp = self.call("GET", f"/v1/cluster/{cluster}/deployment/{deployment}")
        return _object(resp), resp.headers.get("ETag")

    def create_deployment(self, cluster: str, body: Row) -> Row:
        """``POST /v1/cluster/<c>/deployment``: the created deployment."""
        return self.call_object("POST", f"/v1/cluster/{cluster}/deployment", json=body)

    def patch_deployment(self, cluster: str, deployment: str, patch: Mapping[str, object],
                         etag: str | None = None) -> Row:
        """Merge-patch a deployment (only if it is still at ``etag``, when given)."""
        headers = {"Content-Type": "application/merge-patch+json",
                   **({"If-Match": etag} if etag else {})}
        return _object(self.call("PATCH", f"/v1/cluster/{cluster}/deployment/{deployment}",
                                 json=patch, headers=headers))

    def delete_deployment(self, cluster: str, deployment: str) -> None:
        """Delete a deployment."""
        self.call("DELETE", f"/v1/cluster/{cluster}/deployment/{deployment}")

    def charts(self) -> list[Row]:
        """The Helm chart templates."""
        return rows(self.call_object("GET", "/v1/chart"), "charts")

    # -- imports ----------------------------------------------------------------------------

    def import_chart(self, archive: bytes, template: str | None = None) -> Row:
        """``POST /v1/chart``: a chart archive into the shared charts repo."""
        params = {"template": template} if template is not None else None
        return _object(self.call("POST", "/v1/chart", data=archive, params=params,
                                 headers={"Content-Type": "application/gzip"}))

    def import_flux(self, export: bytes) -> Row:
        """``POST /v1/flux-version``: a `flux install --export` into the central Flux repo."""
        return _object(self.call("POST", "/v1/flux-version", data=export,
                                 headers={"Content-Type": "application/yaml"}))

    def imported_charts(self) -> list[Row]:
        """``{name, version}`` of each chart in the shared charts repo."""
        return rows(self.call_object("GET", "/v1/chart", params={"imported": "true"}),
                    "imported")

    def flux_versions(self) -> list[str]:
        """The Flux versions in the central Flux repo, oldest first."""
        return strings(self.call_object("GET", "/v1/flux-version").get("versions"))

    # -- secrets ----------------------------------------------------------------------------

    @staticmethod
    def _key_path(cluster: str, namespace: str, name: str, key: str) -> str:
        parts = "/".join(quote(p, safe="") for p in (namespace, name, key))
        return f"/v1/cluster/{cluster}/secret/{parts}"

    def seal(self, cluster: str, namespace: str, name: str, key: str, value: bytes, *,
             scope: str | None = None, dry_run: bool = False) -> None:
        """Seal ``value`` to the edge and commit it (or only check, with ``dry_run``)."""
        params = {**({"scope": scope} if scope else {}), **({"dryrun": ""} if dry_run else {})}
        self.call("PUT", self._key_path(cluster, namespace, name, key), data=value,
                  params=params, headers={"Content-Type": "application/octet-stream"})

    def unseal_key(self, cluster: str, namespace: str, name: str, key: str, *,
                   dry_run: bool = False) -> None:
        """Remove one key of a sealed secret."""
        params = {"dryrun": ""} if dry_run else {}
        self.call("DELETE", self._key_path(cluster, namespace, name, key), params=params)

    def secrets(self, cluster: str, *, unused: bool = False) -> list[Row]:
        """``[{namespace, name, scope, keys, unsealed, sealed}]``; never values; ``unused``:
        only those no workload on the edge references."""
        query = "?unused=true" if unused else ""
        resp = self.call("GET", f"/v1/cluster/{cluster}/secret{query}")
        body: object = resp.json()
        if not isinstance(body, list):
            raise ApiError(resp.status_code, f"{resp.url} answered no JSON list")
        return [row for row in body if is_object(row)]
