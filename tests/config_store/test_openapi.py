"""The OpenAPI document: valid OpenAPI 3.1, in step with the Flask routes, and served.

Every Flask URL rule (with every method but the implicit HEAD/OPTIONS) must be documented,
and every documented operation must reach a real rule: directly, with the same path
template, or, for v1 paths, through the ``FORWARDS`` rewrite of ``v1_routes``. A scenario
run in-process checks real statuses, JSON bodies and required headers against the document.
"""

from __future__ import annotations

import base64
import itertools
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from flask import Flask
from jsonschema import Draft202012Validator
from openapi_spec_validator import OpenAPIV31SpecValidator, validate
from werkzeug.exceptions import HTTPException
from werkzeug.routing import Rule, WebsocketMismatch

from fplus.config_store import uuids
from fplus.config_store._domain.store import open_store
from fplus.config_store._http import misc_routes
from fplus.config_store._http.app import create_app
from fplus.config_store._http.v1_routes import FORWARDS, forward_v1
from tests.openapi_doc import deref, inline, operations

SPEC_FILE = Path(__file__).resolve().parents[2] / "fplus" / "spec" / "config-store.yaml"
SERVER = "http://localhost"
"""Where the in-process test client reaches the app: what its document lists as its server."""
IMPLICIT = {"HEAD", "OPTIONS"}
"""Methods Flask adds to rules by itself; checked only where the document names them."""

ALIASES = {"klass": "class", "_app": "app"}
"""Flask argument names that cannot be the documented ones (a keyword, an unused argument)."""

SAMPLE_UUID = "0c6e8d1a-1b2c-4d3e-8f40-5a6b7c8d9e0f"
_VAR = re.compile(r"<(?:(?P<conv>\w+)(?:\((?P<args>[^)]*)\))?:)?(?P<name>\w+)>")
_PARAM = re.compile(r"\{(\w+)\}")


# -- helpers --------------------------------------------------------------------------
def templates(rule: str) -> list[str]:
    """OpenAPI path templates for a Flask rule; ``any(a, b)`` expands to both paths."""
    pieces: list[list[str]] = []
    pos = 0
    for m in _VAR.finditer(rule):
        pieces.append([rule[pos:m.start()]])
        if m["conv"] == "any":
            pieces.append([a.strip().strip("'\"") for a in m["args"].split(",")])
        else:
            pieces.append(["{" + ALIASES.get(m["name"], m["name"]) + "}"])
        pos = m.end()
    pieces.append([rule[pos:]])
    return ["".join(p) for p in itertools.product(*pieces)]






def parameters(spec: dict[str, Any], path: str, op: dict[str, Any]) -> list[dict[str, Any]]:
    """An operation's parameters, path-level ones included, references resolved."""
    item = deref(spec, spec["paths"][path])
    return [deref(spec, p) for p in [*item.get("parameters", []), *op.get("parameters", [])]]


def concrete(path: str) -> str:
    """A request path for a template: a sample UUID for every parameter but ``name``."""
    return _PARAM.sub(lambda m: "alice" if m[1] == "name" else SAMPLE_UUID, path)


def after_forwarding(path: str, method: str) -> str:
    """The path routing sees once the v1 forwarding middleware has run."""
    seen: dict[str, str] = {}

    def inner(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        seen["path"] = environ["PATH_INFO"]
        return []

    forward_v1(inner)({"PATH_INFO": path, "REQUEST_METHOD": method}, lambda *a: None)
    return seen["path"]


def matching_rule(app: Flask, path: str, method: str) -> Rule:
    """The URL rule serving ``method path`` (WebSocket rules included)."""
    try:
        rule, _ = app.url_map.bind("localhost").match(path, method=method, return_rule=True)
    except WebsocketMismatch:
        rule, _ = app.url_map.bind("localhost", url_scheme="ws").match(
            path, method=method, return_rule=True)
    return rule


# -- fixtures -------------------------------------------------------------------------
@pytest.fixture(scope="module")
def spec() -> dict[str, Any]:
    return yaml.safe_load(SPEC_FILE.read_text())


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Flask:
    return create_app(open_store(tmp_path_factory.mktemp("openapi"), "pw"))


@pytest.fixture(scope="module")
def served(app: Flask) -> set[tuple[str, str]]:
    """``(path template, METHOD)`` for every Flask rule, implicit methods left out."""
    out = set()
    for rule in app.url_map.iter_rules():
        if rule.endpoint == "static":
            continue
        for template in templates(rule.rule):
            out |= {(template, m) for m in (rule.methods or set()) - IMPLICIT}
    return out


# -- the document itself --------------------------------------------------------------
def test_document_is_valid_openapi_3_1(spec: dict[str, Any]) -> None:
    assert spec["openapi"] == "3.1.0"
    validate(spec, cls=OpenAPIV31SpecValidator)


def test_document_version_is_the_servers(spec: dict[str, Any]) -> None:
    assert spec["info"]["title"] == "Config Store"
    assert spec["info"]["version"] == misc_routes.VERSION


def test_operation_ids_are_unique(spec: dict[str, Any]) -> None:
    ids = [op["operationId"] for op in operations(spec).values() if "operationId" in op]
    assert len(ids) == len(set(ids))


def test_public_routes_need_no_credentials(spec: dict[str, Any]) -> None:
    assert spec["security"] == [{"basic": []}, {"bearer": []}]
    public = {path for (path, _), op in operations(spec).items() if op.get("security") == []}
    assert public == {"/ping", "/openapi.yaml", "/metrics", "/notify/v2"}


def test_common_error_statuses_are_documented(spec: dict[str, Any]) -> None:
    """401 wherever a header can be refused; 410 wherever a UUID path segment is parsed."""
    uuid_ref = "#/components/schemas/Uuid"
    problems = []
    for (path, method), op in operations(spec).items():
        if "401" not in op["responses"]:
            problems.append(f"{method} {path}: no 401")
        uuid_params = [p for p in parameters(spec, path, op)
                       if p["in"] == "path" and p["schema"].get("$ref") == uuid_ref]
        if uuid_params and "410" not in op["responses"]:
            problems.append(f"{method} {path}: no 410")
    assert not problems


# -- the document against the routes --------------------------------------------------
def test_templates_expand_any_converters() -> None:
    assert templates("/v2/class/<uuid:klass>/direct/<any(member, subclass):rel>/<uuid:obj>") == [
        "/v2/class/{class}/direct/member/{obj}", "/v2/class/{class}/direct/subclass/{obj}"]
    assert templates("/v1/app/<_app>") == ["/v1/app/{app}"]


def test_every_route_is_documented(spec: dict[str, Any], served: set[tuple[str, str]]) -> None:
    undocumented = sorted(served - set(operations(spec)))
    assert not undocumented, f"routes missing from the OpenAPI document: {undocumented}"


def test_every_documented_operation_is_served(spec: dict[str, Any], app: Flask) -> None:
    problems = []
    for path, method in operations(spec):
        request_path = concrete(path)
        routed = after_forwarding(request_path, method)
        try:
            rule = matching_rule(app, routed, method)
        except HTTPException as exc:
            problems.append(f"{method} {path} (routed as {routed}): {exc.code}")
            continue
        if rule.endpoint == "static":
            problems.append(f"{method} {path} reaches the static files")
        elif routed == request_path and path not in templates(rule.rule):
            problems.append(f"{method} {path} is served by {rule.rule}")
        elif routed != request_path and not path.startswith("/v1/"):
            problems.append(f"{method} {path} is rewritten to {routed}")
    assert not problems


def test_every_v1_forward_is_documented(spec: dict[str, Any]) -> None:
    """Each FORWARDS pattern, with each ``(?:a|b)`` alternative, matches a documented path."""
    documented = [concrete(p) for p in spec["paths"]]
    missing = []
    for pattern, _ in FORWARDS:
        groups = re.findall(r"\(\?:([^)]*)\)", pattern.pattern)
        for choice in itertools.product(*(g.split("|") for g in groups)):
            picks = iter(choice)
            variant = re.sub(r"\(\?:[^)]*\)", lambda _m, picks=picks: next(picks),
                             pattern.pattern)
            if not any(re.match(variant, p) for p in documented):
                missing.append(variant)
    assert not missing


def test_head_is_documented_for_entries(spec: dict[str, Any], app: Flask) -> None:
    path = "/v2/app/{app}/object/{obj}"
    assert "head" in spec["paths"][path]
    assert path in templates(matching_rule(app, concrete(path), "HEAD").rule)


# -- the document is served -----------------------------------------------------------
def test_document_is_served(app: Flask) -> None:
    response = app.test_client().get("/openapi.yaml")
    assert response.status_code == 200
    assert response.mimetype == "application/yaml"
    served = yaml.safe_load(response.get_data(as_text=True))
    assert served == yaml.safe_load(SPEC_FILE.read_text()) | {"servers": [{"url": SERVER}]}


# -- the document against real responses ---------------------------------------------


class Conformance:
    """Sends requests in-process and checks each response against its documented operation."""

    def __init__(self, spec: dict[str, Any], app: Flask) -> None:
        self.spec, self.ops = spec, operations(spec)
        self.client = app.test_client()
        token = base64.b64encode(b"admin:pw").decode()
        self.admin = {"Authorization": f"Basic {token}"}
        self.problems: list[str] = []

    def __call__(self, method: str, template: str, path: str, status: int, *,
                 anonymous: bool = False, headers: dict[str, str] | None = None,
                 **kwargs: Any) -> Any:
        sent = {**({} if anonymous else self.admin), **(headers or {})}
        r = self.client.open(path, method=method, headers=sent, **kwargs)
        where = f"{method} {path} ({template}) -> {r.status_code}"
        if r.status_code != status:
            self.problems.append(f"{where}: expected {status}: {r.get_data(as_text=True)}")
        documented = inline(self.spec, self.ops[(template, method)]["responses"])
        response = documented.get(str(r.status_code))
        if response is None:
            self.problems.append(f"{where}: status not documented")
            return r
        for name, header in response.get("headers", {}).items():
            value = r.headers.get(name)
            if value is None:
                if header.get("required"):
                    self.problems.append(f"{where}: no {name} header")
            elif errors := list(Draft202012Validator(header["schema"]).iter_errors(value)):
                self.problems.append(f"{where}: {name}: {errors[0].message}")
        content = response.get("content")
        body = r.get_data(as_text=True)
        if not content:
            if body and method != "HEAD":
                self.problems.append(f"{where}: undocumented body {body[:80]!r}")
            return r
        if r.mimetype not in content:
            self.problems.append(f"{where}: undocumented content type {r.mimetype}")
        elif r.mimetype == "application/json":
            schema = content[r.mimetype].get("schema", {})
            for error in Draft202012Validator(schema).iter_errors(json.loads(body)):
                self.problems.append(f"{where}: {error.message}")
        return r


def test_responses_conform_to_the_document(spec: dict[str, Any], app: Flask) -> None:
    check = Conformance(spec, app)
    cls, perm = uuids.Class, uuids.ConfigDBPerm
    # service
    check("GET", "/ping", "/ping", 200, anonymous=True)
    check("GET", "/ping", "/ping", 401, anonymous=True, headers={"Authorization": "Basic x"})
    check("GET", "/openapi.yaml", "/openapi.yaml", 200, anonymous=True)
    token = check("POST", "/token", "/token", 200).json["token"]
    check("GET", "/v2/whoami", "/v2/whoami", 200, anonymous=True,
          headers={"Authorization": f"Bearer {token}"})
    check("GET", "/notify/v2", "/notify/v2", 426, anonymous=True)
    check("GET", "/v2/save", "/v2/save", 403)
    check("GET", "/v1/save", "/v1/save", 403)
    check("GET", "/v2/object", "/v2/object", 401, anonymous=True)
    check("GET", "/notify/v2", "/notify/v2", 426)
    # objects
    app_uuid = check("POST", "/v2/object", "/v2/object", 201, json={"class": cls.App}).json["uuid"]
    check("POST", "/v2/object", "/v2/object", 200, json={"class": cls.App, "uuid": app_uuid})
    check("POST", "/v2/object", "/v2/object", 422, json={"class": cls.App, "rank": 0})
    check("POST", "/v2/object", "/v2/object", 415, data="{}", content_type="text/plain")
    obj = check("POST", "/v1/object", "/v1/object", 201, json={"class": cls.Device}).json["uuid"]
    check("GET", "/v2/object", "/v2/object", 200)
    check("GET", "/v2/object/rank", "/v2/object/rank", 200)
    check("GET", "/v2/object/{obj}", f"/v2/object/{obj}", 200)
    check("GET", "/v2/object/{obj}", f"/v2/object/{cls.R3Class}", 200)  # rank 4, no class
    check("GET", "/v1/object/{obj}", f"/v1/object/{obj}", 200)
    check("GET", "/v2/object/{obj}", "/v2/object/NOT-A-UUID", 410)
    check("DELETE", "/v2/object/{obj}", f"/v2/object/{cls.App}", 405)
    # classes
    check("GET", "/v2/class", "/v2/class", 200)
    check("GET", "/v2/app", "/v2/app", 200)
    check("GET", "/v2/class/{class}", f"/v2/class/{cls.App}", 200)
    check("GET", "/v2/class/{class}", f"/v2/class/{SAMPLE_UUID}", 404)
    for rel in ("member", "subclass", "direct/member", "direct/subclass"):
        check("GET", f"/v2/class/{{class}}/{rel}", f"/v2/class/{cls.App}/{rel}", 200)
    check("GET", "/v2/class/{class}/member/{obj}", f"/v2/class/{cls.App}/member/{app_uuid}", 204)
    check("GET", "/v2/class/{class}/subclass/{obj}", f"/v2/class/{cls.App}/subclass/{obj}", 404)
    direct = f"/v2/class/{cls.Device}/direct/member/{obj}"
    check("GET", "/v2/class/{class}/direct/member/{obj}", direct, 204)
    check("PUT", "/v2/class/{class}/direct/member/{obj}", direct, 204)
    check("DELETE", "/v2/class/{class}/direct/member/{obj}", direct, 409)
    check("PUT", "/v2/class/{class}/direct/subclass/{obj}",
          f"/v2/class/{cls.Device}/direct/subclass/{obj}", 409)
    check("GET", "/v1/app", "/v1/app", 200)
    check("POST", "/v1/app", "/v1/app", 403)
    check("GET", "/v1/app/{app}", "/v1/app/anything", 403)
    check("GET", "/v1/class", "/v1/class", 200)
    check("GET", "/v1/class/{class}", f"/v1/class/{cls.App}", 200)
    # entries
    entry = f"/v2/app/{app_uuid}/object/{obj}"
    e = "/v2/app/{app}/object/{obj}"
    check("GET", e, entry, 404)
    etag = check("PUT", e, entry, 201, json={"a": 1}).headers["ETag"]
    check("PUT", e, entry, 204, json={"a": 1})
    check("PUT", e, entry, 412, json={"a": 2}, headers={"If-None-Match": "*"})
    check("GET", e, entry, 200)
    check("HEAD", e, entry, 200)
    check("GET", e, entry, 304, headers={"If-None-Match": etag})
    check("GET", e, entry, 412, headers={"If-Match": f'"{SAMPLE_UUID}"'})
    check("GET", e, entry, 400, headers={"If-Match": "no-quotes"})
    check("PUT", e, entry, 400, data="{", content_type="application/json")
    check("PUT", e, entry, 413, data="0" * (1024 * 1024 + 1), content_type="application/json")
    check("PATCH", e, entry, 415, json={"b": 2})
    check("PATCH", e, entry, 204, data='{"b": 2}', content_type="application/merge-patch+json")
    check("GET", "/v2/app/{app}/object", f"/v2/app/{app_uuid}/object", 200)
    check("GET", "/v2/app/{app}/class/{class}", f"/v2/app/{app_uuid}/class/{cls.Device}", 200)
    check("GET", "/v1/app/{app}/object", f"/v1/app/{app_uuid}/object", 200)
    check("GET", "/v1/app/{app}/device", f"/v1/app/{app_uuid}/device", 200)
    check("GET", "/v1/app/{app}/device/{obj}", f"/v1/app/{app_uuid}/device/{obj}", 200)
    check("GET", "/v1/app/{app}/config", f"/v1/app/{app_uuid}/config", 404)
    check("GET", "/v1/app/{app}/search", f"/v1/app/{app_uuid}/search?b=2", 200)
    check("GET", "/v1/app/{app}/search", f"/v1/app/{app_uuid}/search?@x=a", 200)
    check("GET", "/v1/app/{app}/search", f"/v1/app/{app_uuid}/search?b=two", 400)
    check("GET", "/v1/app/{app}/class/{class}/search",
          f"/v1/app/{app_uuid}/class/{cls.Device}/search", 200)
    check("DELETE", "/v2/object/{obj}", f"/v2/object/{app_uuid}", 409)
    check("PUT", e, f"/v2/app/{uuids.App.ConfigSchema}/object/{app_uuid}", 409,
          json={"type": "string"})
    check("DELETE", e, entry, 204)
    check("DELETE", e, entry, 404)
    check("DELETE", e, f"/v2/app/{uuids.App.Registration}/object/{obj}", 405)
    check("PUT", e, entry, 201, json=0)
    check("GET", e, entry, 200)  # a falsy value is a value
    check("PATCH", e, entry, 409, data="{}", content_type="application/merge-patch+json")
    check("PUT", e, f"/v2/app/{uuids.App.ConfigSchema}/object/{app_uuid}", 422,
          json={"type": 5})
    registration = f"/v2/app/{uuids.App.Registration}/object/{obj}"
    check("PUT", e, registration, 204, json=check("GET", e, registration, 200).json)
    check("HEAD", e, registration, 304, headers={"If-None-Match": "*"})
    v1 = "/v1/app/{app}/app/{obj}"
    check("PUT", v1, f"/v1/app/{app_uuid}/app/{app_uuid}", 201, json={"own": True})
    check("GET", "/v1/app/{app}/config", f"/v1/app/{app_uuid}/config", 200)
    check("DELETE", "/v1/app/{app}/config", f"/v1/app/{app_uuid}/config", 204)
    check("GET", "/v1/app/{app}/config-schema", f"/v1/app/{app_uuid}/config-schema", 404)
    spare = check("POST", "/v2/object", "/v2/object", 201, json={"class": cls.Device}).json
    check("DELETE", "/v1/object/{obj}", f"/v1/object/{spare['uuid']}", 204)
    check("POST", "/v2/object", "/v2/object", 409, json={"class": obj})
    # auth
    check("GET", "/v2/whoami", "/v2/whoami", 200)
    check("GET", "/v2/whoami/uuid", "/v2/whoami/uuid", 200)
    who = check("POST", "/v2/principal", "/v2/principal", 201,
                json={"name": "bob", "password": "secret"}).json["uuid"]
    check("POST", "/v2/principal", "/v2/principal", 200, json={"name": "bob"})
    check("GET", "/v2/principal", "/v2/principal", 200)
    check("GET", "/v2/principal/{principal}", f"/v2/principal/{who}", 200)
    check("PUT", "/v2/principal/{principal}/password", f"/v2/principal/{who}/password", 204,
          json="new-secret")
    check("PUT", "/v2/principal/{principal}/password", f"/v2/principal/{who}/password", 422,
          json="")
    check("GET", "/v2/whoami", "/v2/whoami?detail=true", 200)
    check("GET", "/v2/principal", "/v2/principal?detail=true", 200)
    check("GET", "/v2/principal/{principal}", f"/v2/principal/{who}?detail=true", 200)
    check("GET", "/v2/principal/{principal}/groups", f"/v2/principal/{who}/groups", 200)
    check("PUT", "/v2/principal/{principal}/{kind}", f"/v2/principal/{who}/kerberos", 204,
          json="bob@REALM")
    check("PUT", "/v2/principal/{principal}/{kind}", f"/v2/principal/{who}/kerberos", 422,
          json="bob")
    check("PUT", "/v2/principal/{principal}/{kind}", f"/v2/principal/{who}/login", 405,
          json="bob@REALM")
    check("GET", "/v2/principal/{principal}/{kind}", f"/v2/principal/{who}/kerberos", 200)
    check("GET", "/v2/identity", "/v2/identity", 200)
    check("GET", "/v2/identity/{kind}", "/v2/identity/kerberos", 200)
    check("GET", "/v2/identity/{kind}/{name}", "/v2/identity/kerberos/bob@REALM", 200)
    check("GET", "/v2/identity/{kind}/{name}", "/v2/identity/login/bob", 200)
    check("GET", "/v2/identity/{kind}/{name}", "/v2/identity/kerberos/bob", 200)  # ours: login
    check("GET", "/v2/identity/{kind}/{name}", "/v2/identity/kerberos/nobody@REALM", 404)
    grant = {"principal": who, "permission": perm.ReadApp, "target": app_uuid, "object": obj}
    g = check("POST", "/v2/grant", "/v2/grant", 201, json=grant).json["uuid"]
    check("POST", "/v2/grant", "/v2/grant", 200, json=grant)
    check("POST", "/v2/grant", "/v2/grant", 422, json={**grant, "extra": 1})
    check("POST", "/v2/grant/find", "/v2/grant/find", 200, json={"principal": who})
    check("GET", "/v2/grant/{grant}", f"/v2/grant/{g}", 200)
    check("GET", "/v2/acl/{principal}", f"/v2/acl/{who}", 200)
    check("GET", "/v2/acl/kerberos/{name}", "/v2/acl/kerberos/bob@REALM", 200)
    check("GET", "/v2/grant", "/v2/grant", 200)
    check("PUT", "/v2/grant/{grant}", f"/v2/grant/{g}", 204, json={**grant, "plural": False})
    check("PUT", "/v2/grant/{grant}", f"/v2/grant/{uuids.NULL}", 404, json=grant)
    check("GET", "/authz/acl", f"/authz/acl?principal={who}&permission={perm.ReadApp}"
          "&by-uuid=true", 200)
    check("GET", "/authz/acl", f"/authz/acl?principal={who}&by-uuid=maybe", 400)
    check("GET", "/authz/principal/find", "/authz/principal/find?kerberos=bob@REALM", 200)
    check("GET", "/authz/principal/{principal}", f"/authz/principal/{who}", 200)
    check("DELETE", "/authz/principal/{principal}", f"/authz/principal/{who}", 410)
    check("GET", "/authz/ace", "/authz/ace", 410)
    check("GET", "/authz/group", "/authz/group", 200)
    check("GET", "/authn/authenticate", "/authn/authenticate", 200)
    check("DELETE", "/v2/principal/{principal}/{kind}", f"/v2/principal/{who}/kerberos", 204)
    check("DELETE", "/v2/grant/{grant}", f"/v2/grant/{g}", 204)
    check("GET", "/v2/grant/{grant}", f"/v2/grant/{g}", 404)
    check("DELETE", "/v2/principal/{principal}", f"/v2/principal/{who}", 204)
    # dumps
    dump = {"service": uuids.Service.ConfigDB, "version": 2,
            "objects": {cls.Device: {SAMPLE_UUID: {"name": "Sample"}}}}
    check("POST", "/load", "/load", 204, json=dump)
    check("POST", "/load", "/load", 422, json={**dump, "version": 1})
    auth_dump = {"service": uuids.Service.Auth, "version": 2,
                 "grants": {who: {perm.ReadApp: None}}}
    check("POST", "/load", "/load", 204, json=auth_dump)
    assert not check.problems, "\n".join(check.problems)
