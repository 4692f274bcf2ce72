"""Property-based API tests: schemathesis against the real services and their OpenAPI documents.

Both services run as subprocesses on free loopback ports in temp dirs: a Config Store alone
(``fplus/spec/config-store.yaml``), and a stack of Config Store, Git server and Cluster Manager
(``fplus/spec/cluster-manager.yaml``) in which the fixture first commissions clusters in several
states. Every generated request is sent as the admin (HTTP Basic, the ``basic`` scheme).
Each documented operation is one test.

Phases: examples, coverage (schemathesis' deterministic boundary and negative cases) and
fuzzing; not stateful. Generation is derandomized (``deterministic``, fixed seed) with a small
``max-examples`` and no example database, so runs are reproducible and bounded.

Checks, chosen deliberately:

- ``not_a_server_error``: no 5xx (for the Cluster Manager, the documented ``503`` is the
  expected answer in one state the fixture sets up, so it is allowed there).
- ``status_code_conformance``: every status is documented for its operation.
- ``content_type_conformance``, ``response_schema_conformance``,
  ``response_headers_conformance``: media types, bodies and required headers (``ETag``,
  ``WWW-Authenticate``, ``Cache-Control``) are as documented.
- ``ignored_auth``: an operation that declares credentials refuses requests without them and
  with invalid ones.
- Cluster Manager only:
  ``negative_data_rejection`` (a request violating the document, e.g. a malformed path
  segment or ``scope``, answers 4xx), ``positive_data_acceptance`` (a request the document
  allows is not refused as malformed: it gets 2xx or a refusal explained by state, 401, 403,
  404, 409, 410, 412 (a generated If-Match), 422 or 503), ``unsupported_method`` (an
  undocumented method answers 405 with ``Allow``) and ``allow_header_conformance``
  (``OPTIONS`` lists the documented methods).

Left out, because a correct server fails them or they do not apply:

- on the Config Store, ``negative_data_rejection`` and ``positive_data_acceptance``
  (ConfigDB compatibility answers a malformed UUID with 410, and search terms are free-form
  query items the server parses itself; besides, schemathesis' coverage phase sends header
  values outside their documented pattern, such as ``If-Match: 0``, as valid ones),
  ``unsupported_method`` (it authenticates before routing, so an undocumented method on a
  public path answers 401 without credentials) and ``allow_header_conformance`` (v1 paths
  are rewritten to v2 routes before routing, so ``OPTIONS`` on them describes the v1 rule,
  not the forwarded methods);
- everywhere, ``missing_required_header`` (no operation requires a request header) and
  ``use_after_free``, ``ensure_resource_availability`` and ``object_level_authorization``
  (stateful; the admin may read and undelete everything).

Generated cluster UUIDs never name a real cluster, so :func:`steer` replaces them, for most
cases, with one of the fixture's clusters (picked by a digest of the case, so still
reproducible), and gives some bootstrap-script requests a real token, fresh or already spent.
"""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from cryptography.hazmat.primitives.asymmetric import rsa
from schemathesis.config import SchemathesisConfig

from fplus.config_store import uuids
from harness.certs import make_cert
from harness.gitcli import push_from_clone
from harness.servers import ADMIN_PASSWORD, Api, ServiceProcess
from harness.stack import Stack, create_cluster, start_stack, status, wait_for

SPEC = Path(__file__).resolve().parents[1] / "fplus" / "spec"
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
EDGE_STATUS = uuids.App.EdgeClusterStatus

COMMON_CHECKS = ("not_a_server_error", "status_code_conformance", "content_type_conformance",
                 "response_schema_conformance", "response_headers_conformance", "ignored_auth")


def settings(checks: tuple[str, ...], max_examples: int, *,
             options: dict[str, dict[str, Any]] | None = None,
             operations: list[dict[str, Any]] | None = None) -> SchemathesisConfig:
    """A bounded, reproducible configuration running only ``checks`` (with ``options``)."""
    options = options or {}
    return SchemathesisConfig.from_dict({
        "seed": 20261122,
        "generation": {"max-examples": max_examples, "deterministic": True, "database": "none"},
        "phases": {"stateful": {"enabled": False}},
        "checks": {"enabled": False, **{name: {"enabled": True, **options.get(name, {})}
                                        for name in checks}},
        "auth": {"openapi": {"basic": {"username": "admin", "password": ADMIN_PASSWORD}}},
        "request-timeout": 30,
        "operations": operations or [],
    })


# -- Config Store -----------------------------------------------------------------------------
config_store = schemathesis.openapi.from_path(
    SPEC / "config-store.yaml",
    config=settings(COMMON_CHECKS, max_examples=8, operations=[
        # the v1 forwards reach the same v2 code: a few examples each are enough
        {"include-path-regex": "^/v1/app/\\{app\\}/(app|device|schema|object)/",
         "generation": {"max-examples": 2}},
    ]))


@pytest.fixture(scope="module")
def config_store_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    server = ServiceProcess(tmp_path_factory.mktemp("schemathesis-cs") / "data").start()
    try:
        yield server.url
    finally:
        server.stop()


@config_store.parametrize()
def test_config_store(case: schemathesis.Case, config_store_url: str) -> None:
    case.call_and_validate(base_url=config_store_url)


# -- Cluster Manager --------------------------------------------------------------------------
# 412: a well-formed If-Match naming another version of a cluster's configuration
POSITIVE = ["2xx", "401", "403", "404", "409", "410", "412", "422", "5xx"]
cluster_manager = schemathesis.openapi.from_path(
    SPEC / "cluster-manager.yaml",
    config=settings(
        (*COMMON_CHECKS, "negative_data_rejection", "positive_data_acceptance",
         "unsupported_method", "allow_header_conformance"),
        max_examples=20, options={
            "not_a_server_error": {"expected-statuses": ["2xx", "3xx", "4xx", "503"]},
            "positive_data_acceptance": {"expected-statuses": POSITIVE},
        }, operations=[
            # a label selector's grammar is more than a JSON schema says: a string the schema
            # allows may still be a malformed selector, which is the documented 400
            {"include-operation-id": "listClusters",
             "checks": {"positive_data_acceptance": {"expected-statuses": [*POSITIVE, "400"]}}},
        ]))


@dataclass
class Clusters:
    """The fixture's clusters, for generated requests to reach."""

    manager: Api
    """The Cluster Manager, as the admin."""
    sealing: str
    """Ready; Edge Sync reports a heartbeat and a sealing certificate (secrets: 204)."""
    idle: str
    """Ready; Edge Sync never reported (secrets: 404)."""
    uncertified: str
    """Ready; Edge Sync reported, long ago, without a certificate (seal: 503)."""
    broken: str
    """Ready; Edge Sync reported a certificate that does not parse (seal: 422)."""
    failed: str
    """Its configuration names an unknown chart (phase Failed, no repository)."""

    def pick(self, generated: str, digest: int) -> str:
        """One of the clusters for most cases; the generated (unknown) UUID for the rest."""
        pool = [self.sealing, self.sealing, self.sealing, self.idle, self.uncertified,
                self.broken, self.failed, generated]
        return pool[digest % len(pool)]

    def disposable(self) -> str:
        """A new cluster (through the cluster API), for a case that deletes one."""
        r = self.manager.post("/v1/cluster", json={"name": f"fuzz-{uuid.uuid4().hex[:12]}",
                                                   "namespace": "fplus-edge"})
        assert r.status_code == 201, r.text
        return r.json()["uuid"]

    def token(self, cluster: str) -> str:
        """A new bootstrap token for ``cluster`` (superseding its previous one)."""
        r = self.manager.post(f"/v1/cluster/{cluster}/bootstrap-url")
        assert r.status_code == 200, r.text
        return r.json().rsplit("token=", 1)[1]

    def spent_token(self, cluster: str) -> str:
        token = self.token(cluster)
        r = self.manager.get(f"/v1/cluster/{cluster}/bootstrap", params={"token": token})
        assert r.status_code == 200, r.text
        return token


def _report_edge(admin: Api, cluster: str, **fields: Any) -> None:
    """Write the Edge cluster status as Edge Sync would."""
    r = admin.patch(f"/v2/app/{EDGE_STATUS}/object/{cluster}", data=json.dumps(fields),
                    headers={"Content-Type": "application/merge-patch+json"})
    assert r.status_code == 204, r.text


@pytest.fixture(scope="module")
def clusters(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Clusters]:
    root = tmp_path_factory.mktemp("schemathesis-cm")
    stack: Stack = start_stack(root)
    try:
        admin = stack.admin
        ready = [create_cluster(admin, f"fuzz-{name}")
                 for name in ("sealing", "idle", "uncertified", "broken")]
        failed = create_cluster(admin, "fuzz-failed", chart="00000000-0000-4000-8000-0000000000ff")
        for cluster in ready:
            wait_for(lambda c=cluster: (status(admin, c) or {}).get("ready"), what="ready")
        wait_for(lambda: (status(admin, failed) or {}).get("phase") == "Failed", what="Failed")
        sealing, idle, uncertified, broken = ready
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        now = datetime.now(UTC).isoformat().replace("+00:00", "Z")
        host = {"hostname": "node-1", "arch": "amd64", "k8s_version": "v1.30.4",
                "control_plane": True, "os_version": "Linux", "ready": True}
        _report_edge(admin, sealing, kubeseal_cert=make_cert(key), lastSeen=now,
                     version="0.1.0", hosts=[host])
        _report_edge(admin, uncertified, lastSeen="2020-01-01T00:00:00Z", hosts=[])
        _report_edge(admin, broken, kubeseal_cert="-----BEGIN CERTIFICATE-----\nnot one\n")
        # a file under edo/secrets/ that is no SealedSecret: listed as {path, error}
        git = stack.git.url.replace("http://", f"http://admin:{ADMIN_PASSWORD}@")
        push_from_clone(f"{git}/uuid/{sealing}", root / "clone",
                        "edo/secrets/fplus-edge/by-hand.yaml",
                        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: by-hand}\n")
        yield Clusters(Api(stack.manager.url, ("admin", ADMIN_PASSWORD)),
                       sealing, idle, uncertified, broken, failed)
    finally:
        stack.stop()


def steer(case: schemathesis.Case, clusters: Clusters) -> None:
    """Point ``case`` at one of the fixture's clusters, and maybe give it a real token.

    Only syntactically valid cluster UUIDs are replaced (by other valid ones), so a case
    stays positive or negative as generated.
    """
    generated = (case.path_parameters or {}).get("cluster")
    if not isinstance(generated, str) or not UUID.fullmatch(generated):
        return
    seen = repr((sorted(case.path_parameters.items()), sorted((case.query or {}).items()),
                 case.body, case.method))
    digest = int.from_bytes(hashlib.sha256(seen.encode()).digest()[:8], "big")
    cluster = clusters.pick(generated, digest)
    if case.method.upper() in ("DELETE", "PATCH") \
            and case.operation.path == "/v1/cluster/{cluster}" and cluster != generated:
        cluster = clusters.disposable()  # never tear down or edit the clusters others need
    case.path_parameters["cluster"] = cluster
    if case.operation.path.endswith("/bootstrap") and cluster != clusters.failed \
            and cluster != generated:
        which = (digest >> 8) % 3  # keep the generated token for a third: 401
        if which == 0:
            case.query = {**(case.query or {}), "token": clusters.token(cluster)}
        elif which == 1:
            case.query = {**(case.query or {}), "token": clusters.spent_token(cluster)}


@cluster_manager.parametrize()
def test_cluster_manager(case: schemathesis.Case, clusters: Clusters) -> None:
    steer(case, clusters)
    case.call_and_validate(base_url=clusters.manager.base)
