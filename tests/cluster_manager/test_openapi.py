"""The Cluster Manager's OpenAPI document: valid OpenAPI 3.1, in step with the routes, served.

Every Flask URL rule (with every method but the implicit HEAD/OPTIONS) must be documented and
every documented operation must reach its rule. The documented path parameters must accept
exactly what the server's validation accepts. Responses are checked against the document by
``tests/test_schemathesis.py``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import requests
import yaml
from flask import Flask
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator, ValidationError, validators
from openapi_spec_validator import OpenAPIV31SpecValidator, validate
from werkzeug.exceptions import HTTPException

from fplus.cluster_manager import sealing
from fplus.cluster_manager._http import params, service_routes
from fplus.cluster_manager._http.app import create_app
from fplus.cluster_manager._http.context import ApiServices
from fplus.cluster_manager.metrics import Metrics
from fplus.cluster_manager.model.setup_status import SetupStatus
from fplus.cluster_manager.services.clusters.status_view import derive_phase
from fplus.config_store import uuids
from harness.servers import ServiceProcess, cluster_manager_process, free_port
from tests.openapi_doc import inline, operations

SPEC_FILE = Path(__file__).resolve().parents[2] / "fplus" / "spec" / "cluster-manager.yaml"
SERVER = "http://127.0.0.1:8700"
"""The external URL of the app under test: what its document lists as its server."""
IMPLICIT = {"HEAD", "OPTIONS"}
"""Methods Flask adds to rules by itself."""

PUBLIC = {"/ping", "/healthz", "/metrics", "/openapi.yaml", "/v1/cluster/{cluster}/bootstrap",
          "/v1/edge-ca"}  # the CA is public: an edge has no credentials yet
SAMPLE = {"cluster": "0c6e8d1a-1b2c-4d3e-8f40-5a6b7c8d9e0f", "namespace": "fplus-edge",
          "name": "db", "key": "password", "deployment": "4d1e2f3a-5b6c-4d7e-8f90-a1b2c3d4e5f6",
          "chart": "5e2f3a4b-6c7d-4e8f-9a01-b2c3d4e5f6a7",
          "fleet": "5d1c2b3a-4e5f-4a6b-8c7d-9e0f1a2b3c4d",
          "rollout": "5d1c2b3a-4e5f-4a6b-8c7d-9e0f1a2b3c4d", "window": "nightly",
          "path": "api/v1/namespaces"}
_VAR = re.compile(r"<(?:\w+(?:\([^)]*\))?:)?(?P<name>\w+)>")


# -- helpers --------------------------------------------------------------------------
def template(rule: str) -> str:
    """The OpenAPI path template of a Flask rule."""
    return _VAR.sub(lambda m: "{" + m["name"] + "}", rule)








def parameters(spec: dict[str, Any], path: str, op: dict[str, Any]) -> list[dict[str, Any]]:
    """An operation's parameters, path-level ones included, references resolved."""
    item = spec["paths"][path]
    return [inline(spec, p) for p in [*item.get("parameters", []), *op.get("parameters", [])]]


def _ecma_pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[Any]:
    """``pattern`` as ECMA-262 reads it: ``$`` is the end of the input (Python's ``re``
    would also match before a final newline)."""
    if isinstance(instance, str) and not re.search(re.sub(r"\$$", r"\\Z", pattern), instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


Validator = validators.extend(Draft202012Validator, {"pattern": _ecma_pattern})


def schema_of(spec: dict[str, Any], schema: dict[str, Any]) -> Any:
    """A validator for a documented schema, with ECMA-262 patterns."""
    return Validator(inline(spec, schema))


def path_schema(spec: dict[str, Any], name: str) -> Any:
    """A validator for the documented path parameter ``name`` (the same everywhere)."""
    found = {yaml.safe_dump(p["schema"]) for (path, _), op in operations(spec).items()
             for p in parameters(spec, path, op) if p["in"] == "path" and p["name"] == name}
    assert len(found) == 1, f"{name} is documented differently on different paths"
    return schema_of(spec, yaml.safe_load(found.pop()))


def accepted(check: Any, value: str) -> bool:
    """Whether the server's validation ``check`` accepts ``value``."""
    try:
        check(value)
    except (sealing.SealingError, HTTPException):
        return False
    return True


def assert_same_verdicts(spec: dict[str, Any], value: str) -> None:
    """The document and the server agree on ``value`` for every path parameter."""
    converters = {name: kind(None).to_python  # type: ignore[arg-type]
                  for name, kind in (("cluster", params.ClusterConverter),
                                     ("deployment", params.DeploymentConverter),
                                     ("chart", params.ChartConverter),
                                     ("fleet", params.FleetConverter),
                                     ("rollout", params.FleetConverter))}
    for name, check in (("namespace", sealing.validate_namespace),
                        ("name", sealing.validate_name), ("key", sealing.validate_key),
                        *converters.items()):
        assert path_schema(spec, name).is_valid(value) == accepted(check, value), (name, value)


# -- fixtures -------------------------------------------------------------------------
@pytest.fixture(scope="module")
def spec() -> dict[str, Any]:
    return yaml.safe_load(SPEC_FILE.read_text())


@pytest.fixture(scope="module")
def app() -> Flask:
    """The real app; the routing and the document route need none of the services."""
    api = ApiServices(cs=None, access=None, secrets=None, clusters=None,  # type: ignore[arg-type]
                      tokens=None, scripts=None,
                      metrics=Metrics(), external_url=SERVER)
    return create_app(api)


@pytest.fixture(scope="module")
def served(app: Flask) -> set[tuple[str, str]]:
    """``(path template, METHOD)`` for every Flask rule, implicit methods left out; the
    console's HTML pages under ``/ui/`` are for browsers, not part of the API."""
    return {(template(rule.rule), method) for rule in app.url_map.iter_rules()
            for method in (rule.methods or set()) - IMPLICIT
            if not rule.rule.startswith("/ui/")}


# -- the document itself --------------------------------------------------------------
def test_document_is_valid_openapi_3_1(spec: dict[str, Any]) -> None:
    assert spec["openapi"] == "3.1.0"
    validate(spec, cls=OpenAPIV31SpecValidator)


def test_document_describes_this_server(spec: dict[str, Any]) -> None:
    assert spec["info"]["title"] == "Cluster Manager"
    assert spec["info"]["version"] == service_routes.VERSION
    ping = spec["components"]["schemas"]["Ping"]["properties"]["service"]
    assert ping["const"] == uuids.Service.Clusters


def test_operation_ids_are_unique(spec: dict[str, Any]) -> None:
    ids = [op["operationId"] for op in operations(spec).values()]
    assert len(ids) == len(operations(spec)) == len(set(ids))


def test_public_routes_need_no_credentials(spec: dict[str, Any]) -> None:
    assert spec["security"] == [{"basic": []}, {"bearer": []}]
    public = {path for (path, _), op in operations(spec).items() if op.get("security") == []}
    assert public == PUBLIC


def test_common_error_statuses_are_documented(spec: dict[str, Any]) -> None:
    """401 and 403 wherever credentials are checked (a listing has no 403: it shows what the
    caller may see); 400 and 503 wherever a cluster is named."""
    problems = []
    for (path, method), op in operations(spec).items():
        responses = set(op["responses"])
        needed = {"401"} if op["operationId"] == "listClusters" else {"401", "403"}
        if op.get("security") != [] and not needed <= responses:
            problems.append(f"{method} {path}: no {'/'.join(sorted(needed))}")
        if "{cluster}" in path and not {"400", "404", "503"} <= responses:
            problems.append(f"{method} {path}: no 400/404/503")
    assert not problems


def test_error_bodies_are_error_objects(spec: dict[str, Any]) -> None:
    """Every 4xx/5xx answer is ``{"error": ...}`` except /healthz's 503."""
    problems = []
    for (path, method), op in operations(spec).items():
        for code, response in inline(spec, op["responses"]).items():
            if code[0] in "45" and path != "/healthz":
                schema = response["content"]["application/json"]["schema"]
                if schema.get("required") != ["error"]:
                    problems.append(f"{method} {path} {code}")
    assert not problems


# -- the document against the routes --------------------------------------------------
def test_every_route_is_documented(spec: dict[str, Any], served: set[tuple[str, str]]) -> None:
    undocumented = sorted(served - set(operations(spec)))
    assert not undocumented, f"routes missing from the OpenAPI document: {undocumented}"


def test_every_documented_operation_is_served(spec: dict[str, Any], app: Flask) -> None:
    urls = app.url_map.bind("localhost")
    problems = []
    for path, method in operations(spec):
        concrete = re.sub(r"\{(\w+)\}", lambda m: SAMPLE[m[1]], path)
        try:
            rule, _ = urls.match(concrete, method=method, return_rule=True)
        except HTTPException as exc:
            problems.append(f"{method} {path}: {exc.code}")
            continue
        if template(rule.rule) != path:
            problems.append(f"{method} {path} is served by {rule.rule}")
    assert not problems


def test_path_parameters_are_named_as_in_the_rules(spec: dict[str, Any]) -> None:
    for (path, method), op in operations(spec).items():
        documented = {p["name"] for p in parameters(spec, path, op) if p["in"] == "path"}
        assert documented == set(re.findall(r"\{(\w+)\}", path)), f"{method} {path}"


# -- the documented parameters against the server's validation ------------------------
ALPHABET = "az09AZ.-_/ \n\u00e9"
segments = st.one_of(st.text(ALPHABET, max_size=20),
                     st.builds(lambda part, n: part * n, st.text("a0-.", min_size=1, max_size=3),
                               st.integers(20, 90)))


@settings(max_examples=300, deadline=None, derandomize=True)
@given(value=segments)
def test_path_parameters_accept_what_the_server_accepts(spec: dict[str, Any],
                                                        value: str) -> None:
    assert_same_verdicts(spec, value)


@pytest.mark.parametrize("value", [
    "a", "a" * 63, "a" * 64, "a" * 250, "a" * 251, "a" * 253, "a" * 254, "a.b", "a..b", ".",
    "..", "..a", ".a", "a.", "-a", "a-", "A", "a_b", "é", SAMPLE["cluster"],
    SAMPLE["cluster"].upper(), SAMPLE["cluster"] + "\n"])
def test_path_parameter_boundaries(spec: dict[str, Any], value: str) -> None:
    assert_same_verdicts(spec, value)


def test_documented_scopes_are_the_servers(spec: dict[str, Any]) -> None:
    assert spec["components"]["schemas"]["Scope"]["enum"] == list(sealing.SCOPES)
    documented = schema_of(spec, spec["components"]["parameters"]["Scope"]["schema"])
    for value in (*sealing.SCOPES, "", "Strict", "cluster", " strict"):
        assert documented.is_valid(value) == accepted(sealing.parse_scope, value), value


def test_documented_phases_are_the_derived_ones(spec: dict[str, Any]) -> None:
    now = datetime.now(UTC)
    setups = [None, {"phase": "Failed"}, {"phase": "Provisioning"}, {"phase": "Deleting"},
              {"phase": "Ready", "ready": True}]
    edges = [None, {"hosts": []}] + [
        {"lastSeen": (now - timedelta(seconds=age)).isoformat()} for age in (1, 120, 3600)]
    derived = {derive_phase(SetupStatus.parse(setup), edge, now)
               for setup in setups for edge in edges}
    assert derived == set(spec["components"]["schemas"]["Phase"]["enum"])


def test_a_created_cluster_matches_its_documented_answer(spec: dict[str, Any]) -> None:
    """The 201 of ``POST /v1/cluster`` is the entry plus ``uuid`` and ``phase``; the request
    body is the entry alone (a closed schema inside ``allOf`` would refuse both additions)."""
    create = spec["paths"]["/v1/cluster"]["post"]
    answer = schema_of(spec, create["responses"]["201"]["content"]["application/json"]
                       ["schema"])
    body = schema_of(spec, create["requestBody"]["content"]["application/json"]["schema"])
    entry = {"name": "line-1", "namespace": "fplus-edge", "bare": True, "fluxVersion": "v2.7.5"}
    created = {**entry, "uuid": "b478845b-007e-429b-ad6a-15462f11d1cb", "phase": "Pending"}
    assert answer.is_valid(created) and body.is_valid(entry)
    assert not answer.is_valid({**created, "extra": 1})
    assert not body.is_valid(created)  # uuid and phase are not the caller's to send


# -- the document is served -----------------------------------------------------------
def test_document_is_served(app: Flask) -> None:
    response = app.test_client().get("/openapi.yaml")
    assert response.status_code == 200
    assert response.mimetype == "application/yaml"
    served = yaml.safe_load(response.get_data(as_text=True))
    assert served == yaml.safe_load(SPEC_FILE.read_text()) | {"servers": [{"url": SERVER}]}


@pytest.fixture(scope="module")
def running_manager(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceProcess]:
    """A ``cluster-manager serve`` process (with its Config Store; no Git server needed)."""
    root = tmp_path_factory.mktemp("openapi")
    store = ServiceProcess(root / "cs").start()
    try:
        manager = cluster_manager_process(root / "cm", store.url,
                                          f"http://127.0.0.1:{free_port()}", root / "repos")
        manager.start()
        try:
            yield manager
        finally:
            manager.stop()
    finally:
        store.stop()


def test_document_is_served_by_the_running_service(running_manager: ServiceProcess) -> None:
    r = requests.get(running_manager.url + "/openapi.yaml", timeout=10)
    assert r.status_code == 200
    assert r.headers["Content-Type"].split(";")[0] == "application/yaml"
    served = yaml.safe_load(r.text)  # the document, naming the URL the service is reached at
    expected = yaml.safe_load(SPEC_FILE.read_text()) | {"servers": [{"url": running_manager.url}]}
    assert served == expected
