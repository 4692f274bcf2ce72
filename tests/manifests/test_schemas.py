"""schemas.yaml: valid draft 2020-12 schemas that accept and reject the right entries.

Each row is checked twice: with format checking (as the Config Store validates) and without
it (so no rule depends on `format`, which is only an annotation to many validators).
"""

from __future__ import annotations

from typing import Any

import pytest
from jsonschema import Draft202012Validator

from fplus import manifests

SCHEMAS = manifests.load("schemas")
U = "c1d2e3f4-a5b6-4c7d-8e9f-0a1b2c3d4e5f"
CERT = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
HOST = {"hostname": "edge-1", "arch": "amd64", "k8s_version": "v1.30.4+k3s1",
        "control_plane": True, "os_version": "Ubuntu 24.04 LTS", "ready": True}


def _validators(app: str) -> list[Draft202012Validator]:
    schema = SCHEMAS[app]
    return [Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER),
            Draft202012Validator(schema)]


def _ok(app: str, value: Any) -> bool:
    results = {v.is_valid(value) for v in _validators(app)}
    assert len(results) == 1, "format checking changes the outcome"
    return results.pop()


def test_the_apps() -> None:
    assert sorted(SCHEMAS) == ["bootstrap-script", "cluster-rollout",
                               "edge-cluster-configuration",
                               "edge-cluster-name-claim", "edge-cluster-request",
                               "edge-cluster-setup-status", "edge-cluster-status",
                               "edge-deployment", "fleet-deployment", "fleet-rollout-status",
                               "flux-template",
                               "helm-chart-template", "k8s-resource-template",
                               "maintenance-window"]


CLAIM = {"cluster": "0badc0de-0000-4000-8000-000000000000", "name": "line-1"}
DEPLOYMENT = {"name": "Machine1", "cluster": U, "chart": U}
FLEET = {"name": "historian", "chart": CLAIM["cluster"], "values": {"a": 1},
         "selector": {"matchLabels": {"site": "leeds"},
                      "matchExpressions": [{"key": "tier", "operator": "Exists"}]},
         "overrides": {CLAIM["cluster"]: {"a": 2}}, "createdAt": "2026-01-01T00:00:00Z"}


ROLLOUT = {"name": "up", "change": {"fluxVersion": "v2.7.5"}, "clusters": [U],
           "rollout": {"steps": [{"clusters": 1}]}, "createdAt": "2026-01-01T00:00:00Z"}


@pytest.mark.parametrize(("app", "value", "ok"), [
    ("cluster-rollout", ROLLOUT, True),
    ("cluster-rollout", ROLLOUT | {"change": {"fluxTemplate": {"self-link.yaml": []}}}, True),
    ("cluster-rollout", ROLLOUT | {"change": {}}, False),
    ("cluster-rollout", ROLLOUT | {"change": {"fluxVersion": "2.7"}}, False),
    ("cluster-rollout", ROLLOUT | {"change": {"fluxVersion": "v2.7.5",
                                              "fluxTemplate": {"self-link.yaml": []}}}, False),
    ("cluster-rollout", ROLLOUT | {"clusters": ["X"]}, False),
    ("cluster-rollout", ROLLOUT | {"bogus": 1}, False),
    ("edge-cluster-configuration", {"name": "a", "namespace": "b", "fluxTemplate": U}, True),
    ("edge-cluster-configuration", {"name": "a", "namespace": "b", "fluxTemplate": "X"},
     False),
    ("edge-cluster-name-claim", CLAIM, True),
    ("edge-cluster-name-claim", {"name": "line-1"}, False),
    ("edge-cluster-name-claim", CLAIM | {"cluster": "X"}, False),
    ("edge-cluster-name-claim", CLAIM | {"extra": 1}, False),
    ("edge-cluster-request", {"redeploy": "2026-01-01T00:00:00Z", "forceDelete": True}, True),
    ("edge-cluster-request", {}, True),
    ("edge-cluster-request", {"forceDelete": "yes"}, False),
    ("edge-cluster-request", {"delete": True}, False),
    ("edge-cluster-status", {"appliedCommit": "a" * 40}, True),
    ("edge-cluster-status", {"appliedCommit": "main@sha1:" + "a" * 40}, False),
    ("edge-deployment", DEPLOYMENT, True),
    ("edge-deployment", DEPLOYMENT | {"hostname": "edge-1", "values": {"a": [1]},
                                      "createdAt": "2025-01-01T00:00:00.000Z",
                                      "fleetDeployment": U}, True),
    ("edge-deployment", DEPLOYMENT | {"hostname": None}, True),
    ("edge-deployment", {"name": "Machine1", "cluster": U, "charts": [U]}, True),
    ("edge-deployment", {"bogus": 1}, False),
    ("edge-deployment", {"name": "Machine1", "cluster": U}, False),
    ("edge-deployment", DEPLOYMENT | {"cluster": "X"}, False),
    ("edge-deployment", DEPLOYMENT | {"chart": "X"}, False),
    ("edge-deployment", DEPLOYMENT | {"hostname": ""}, False),
    ("edge-deployment", DEPLOYMENT | {"values": [1]}, False),
    ("edge-deployment", DEPLOYMENT | {"fleetDeployment": "X"}, False),
    ("edge-deployment", DEPLOYMENT | {"extra": 1}, False),
    ("fleet-deployment", FLEET, True),
    ("fleet-deployment", {"name": "h", "chart": CLAIM["cluster"],
                          "clusters": [CLAIM["cluster"]]}, True),
    ("fleet-deployment", {"name": "h", "chart": CLAIM["cluster"]}, False),
    ("fleet-deployment", FLEET | {"values": [1]}, False),
    ("fleet-deployment", FLEET | {"chart": "X"}, False),
    ("fleet-deployment", FLEET | {"selector": {"matchExpressions": [
        {"key": "k", "operator": "Is"}]}}, False),
    ("fleet-deployment", FLEET | {"overrides": {"not-a-uuid": {}}}, False),
    ("fleet-deployment", FLEET | {"bogus": 1}, False),
    ("fleet-deployment", FLEET | {"rollout": {"maxUnavailable": "34%", "steps": [
        {"clusters": 3, "pause": "manual"}, {"clusters": "50%", "pause": 30},
        {"clusters": {"matchLabels": {"ring": "1"}}}]}}, True),
    ("fleet-deployment", FLEET | {"rollout": {"maxUnavailable": 0}}, False),
    ("fleet-deployment", FLEET | {"rollout": {"steps": [{"clusters": "x"}]}}, False),
    ("fleet-deployment", FLEET | {"rollout": {"steps": [{"clusters": 1, "pause": "no"}]}},
     False),
    ("fleet-deployment", FLEET | {"rolloutRequest": {"action": "abort", "rolloutId": "r",
                                                     "at": "t"}}, True),
    ("fleet-deployment", FLEET | {"rolloutRequest": {"action": "stop", "rolloutId": "r",
                                                     "at": "t"}}, False),
    ("fleet-rollout-status", {"rolloutId": "r", "revision": "v", "state": "Halted",
                              "step": 0, "steps": [{"clusters": [U], "state": "Halted"}],
                              "failed": [{"cluster": U, "message": "m"}],
                              "updatedAt": "t"}, True),
    ("fleet-rollout-status", {"rolloutId": "r", "revision": "v", "state": "Stuck",
                              "step": 0, "steps": [{"clusters": [], "state": "Pending"}],
                              "failed": [], "updatedAt": "t"}, False),
])
def test_the_cluster_managers_own_apps(app: str, value: Any, ok: bool) -> None:
    assert _ok(app, value) is ok


def test_default_bootstrap_script_fits_its_schema() -> None:
    Draft202012Validator(SCHEMAS["bootstrap-script"]).validate(manifests.load("bootstrap-script"))
    bad = {"files": {"../x": "y"}, "wrapper": "#!/bin/sh"}
    assert not Draft202012Validator(SCHEMAS["bootstrap-script"]).is_valid(bad)


@pytest.mark.parametrize("app", sorted(SCHEMAS))
def test_valid_2020_12_schema(app: str) -> None:
    schema = SCHEMAS[app]
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    Draft202012Validator.check_schema(schema)
    assert schema["type"] == "object"
    assert schema.get("title") and schema.get("description")


def _config(**changes: Any) -> dict[str, Any]:
    return {k: v for k, v in ({"name": "shop-floor", "namespace": "fplus-edge"} | changes).items()
            if v is not ...}


CONFIG_ROWS = [
    ("minimal", _config(), True),
    ("all fields", _config(chart=U, bare=True, sealedSecrets=False, values={"a": {"b": [1]}}),
     True),
    ("one char", _config(name="a"), True),
    ("digits only", _config(name="0"), True),
    ("63 chars", _config(name="a" * 63), True),
    ("64 chars", _config(name="a" * 64), False),
    ("upper case", _config(name="Shop-Floor"), False),
    ("empty", _config(name=""), False),
    ("leading dash", _config(name="-a"), False),
    ("trailing dash", _config(name="a-"), False),
    ("dot", _config(name="a.b"), False),
    ("underscore", _config(name="a_b"), False),
    ("path traversal", _config(name="../x"), False),
    ("slash", _config(name="a/b"), False),
    ("sparkplug plus", _config(name="a+b"), False),
    ("sparkplug hash", _config(name="#"), False),
    ("space", _config(name="a b"), False),
    ("trailing newline", _config(name="shop-floor\n"), False),
    ("unicode", _config(name="caf\u00e9"), False),
    ("not a string", _config(name=5), False),
    ("no name", _config(name=...), False),
    ("no namespace", _config(namespace=...), False),
    ("namespace upper", _config(namespace="Edge"), False),
    ("namespace 64", _config(namespace="n" * 64), False),
    ("namespace newline", _config(namespace="edge\n"), False),
    ("chart not uuid", _config(chart="edge-cluster"), False),
    ("chart upper-case uuid", _config(chart=U.upper()), False),
    ("chart uuid newline", _config(chart=U + "\n"), False),
    ("bare string", _config(bare="true"), False),
    ("sealedSecrets string", _config(sealedSecrets="no"), False),
    ("values array", _config(values=[1]), False),
    ("unknown key", _config(extra=1), False),
    ("not an object", ["shop-floor"], False),
]


@pytest.mark.parametrize(("row", "value", "ok"), CONFIG_ROWS, ids=[r[0] for r in CONFIG_ROWS])
def test_edge_cluster_configuration(row: str, value: Any, ok: bool) -> None:
    assert _ok("edge-cluster-configuration", value) is ok


STATUS_ROWS = [
    ("empty", {}, True),
    ("acs ready", {"spec": {"name": "shop-floor", "namespace": "fplus-edge"},
                   "flux": {"uuid": U, "done": True}, "sync": {"uuid": U},
                   "self_link": "---\napiVersion: v1\n", "ready": True, "fluxVersion": "2.7.5"},
     True),
    ("ours", {"phase": "Failed", "error": "name must be a DNS-1123 label", "observedEtag": '"e1"',
              "conditions": [{"type": "Ready", "status": "False", "reason": "InvalidConfig",
                              "message": "m", "lastTransitionTime": "2026-11-22T10:00:00Z"}]},
     True),
    ("error null", {"phase": "Ready", "error": None}, True),
    ("extra field for later steps", {"address": {"done": True}}, True),
    ("phase unknown", {"phase": "Done"}, False),
    ("phase lower", {"phase": "ready"}, False),
    ("ready string", {"ready": "true"}, False),
    ("error number", {"error": 1}, False),
    ("flux uuid bad", {"flux": {"uuid": "x"}}, False),
    ("sync done string", {"sync": {"done": "yes"}}, False),
    ("condition missing status", {"conditions": [{"type": "Ready"}]}, False),
    ("condition status bool", {"conditions": [{"type": "Ready", "status": True}]}, False),
    ("condition time bad", {"conditions": [{"type": "Ready", "status": "True",
                                            "lastTransitionTime": "yesterday"}]}, False),
    ("self_link object", {"self_link": {}}, False),
    ("observedEtag number", {"observedEtag": 3}, False),
    ("not an object", [], False),
]


@pytest.mark.parametrize(("row", "value", "ok"), STATUS_ROWS, ids=[r[0] for r in STATUS_ROWS])
def test_edge_cluster_setup_status(row: str, value: Any, ok: bool) -> None:
    assert _ok("edge-cluster-setup-status", value) is ok


CLUSTER_STATUS_ROWS = [
    ("empty", {}, True),
    ("acs shape", {"hosts": [HOST | {"specialised": "rpi"}], "kubeseal_cert": CERT}, True),
    ("ours", {"hosts": [HOST, HOST | {"hostname": "edge-2", "control_plane": False}],
              "kubeseal_cert": CERT, "lastSeen": "2026-11-22T10:00:00.123+01:00",
              "version": "0.1.0", "deployments": {U: {"ready": True}}}, True),
    ("no hosts yet", {"hosts": []}, True),
    ("host missing ready", {"hosts": [{k: v for k, v in HOST.items() if k != "ready"}]}, False),
    ("host missing hostname", {"hosts": [{k: v for k, v in HOST.items() if k != "hostname"}]},
     False),
    ("empty hostname", {"hosts": [HOST | {"hostname": ""}]}, False),
    ("control_plane string", {"hosts": [HOST | {"control_plane": "true"}]}, False),
    ("specialised number", {"hosts": [HOST | {"specialised": 1}]}, False),
    ("hosts object", {"hosts": HOST}, False),
    ("cert not pem", {"kubeseal_cert": "MIIB"}, False),
    ("lastSeen not a time", {"lastSeen": "now"}, False),
    ("lastSeen no zone", {"lastSeen": "2026-11-22T10:00:00"}, False),
    ("lastSeen newline", {"lastSeen": "2026-11-22T10:00:00Z\n"}, False),
    ("version number", {"version": 1}, False),
    ("deployments array", {"deployments": []}, False),
]


@pytest.mark.parametrize(("row", "value", "ok"), CLUSTER_STATUS_ROWS,
                         ids=[r[0] for r in CLUSTER_STATUS_ROWS])
def test_edge_cluster_status(row: str, value: Any, ok: bool) -> None:
    assert _ok("edge-cluster-status", value) is ok


GITREPO = {"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository"}
FLUX_ROWS = [
    ("default", manifests.load("flux-template"), True),
    ("acs style", {"self-link.yaml": [GITREPO], "edge-cluster.yaml": ["{{ helm }}"],
                   "flux-system.yaml": []}, True),
    ("yml", {"self-link.yaml": [GITREPO], "extra.yml": [GITREPO]}, True),
    ("no self-link", {"edge-sync.yaml": [GITREPO]}, False),
    ("value not array", {"self-link.yaml": GITREPO}, False),
    ("item scalar", {"self-link.yaml": [3]}, False),
    ("item plain string", {"self-link.yaml": ["apiVersion: v1"]}, False),
    ("item without kind", {"self-link.yaml": [{"apiVersion": "v1"}]}, False),
    ("traversal key", {"self-link.yaml": [], "../x.yaml": []}, False),
    ("dotdot key", {"self-link.yaml": [], "a..yaml": []}, False),
    ("slash key", {"self-link.yaml": [], "a/b.yaml": []}, False),
    ("templated key", {"self-link.yaml": [], "{{name}}.yaml": []}, False),
    ("not yaml", {"self-link.yaml": [], "README.md": []}, False),
    ("hidden", {"self-link.yaml": [], ".x.yaml": []}, False),
    ("newline key", {"self-link.yaml": [], "x.yaml\n": []}, False),
    ("options", {"self-link.yaml": [], "x-fplus": {"bareFiles": ["a.yaml"],
                                                   "sealedSecretsFiles": [],
                                                   "sealedSecrets": False}}, True),
    ("unknown option", {"self-link.yaml": [], "x-fplus": {"bare": []}}, False),
    ("option file not a name", {"self-link.yaml": [], "x-fplus": {"bareFiles": ["../a.yaml"]}},
     False),
    ("other x- key", {"self-link.yaml": [], "x-other": {}}, False),
]


@pytest.mark.parametrize(("row", "value", "ok"), FLUX_ROWS, ids=[r[0] for r in FLUX_ROWS])
def test_flux_template(row: str, value: Any, ok: bool) -> None:
    assert _ok("flux-template", value) is ok


HELM_ROWS = [
    ("acs cluster", {"chart": "edge-cluster", "values": {"cluster": {"name": "{{name}}",
                                                                    "uuid": "{{uuid}}"}}}, True),
    ("all", {"chart": "edge-agent", "values": {}, "prefix": "edge-agent", "source": U}, True),
    ("no values", {"chart": "edge-agent"}, False),
    ("no chart", {"values": {}}, False),
    ("empty chart", {"chart": "", "values": {}}, False),
    ("values string", {"chart": "c", "values": "{{values}}"}, False),
    ("source not uuid", {"chart": "c", "values": {}, "source": "helm-charts"}, False),
    ("extra", {"chart": "c", "values": {}, "charts": [U]}, False),
]


@pytest.mark.parametrize(("row", "value", "ok"), HELM_ROWS, ids=[r[0] for r in HELM_ROWS])
def test_helm_chart_template(row: str, value: Any, ok: bool) -> None:
    assert _ok("helm-chart-template", value) is ok


K8S_ROWS = [
    ("default helm release", manifests.load("k8s-resource-templates")["HelmRelease"], True),
    ("default git repository", manifests.load("k8s-resource-templates")["GitRepository"], True),
    ("no resources", {"template": GITREPO}, False),
    ("empty resources", {"resources": [], "template": GITREPO}, False),
    ("resource without kind", {"resources": [{"apiVersion": "v1"}], "template": GITREPO}, False),
    ("resource extra", {"resources": [GITREPO | {"name": "x"}], "template": GITREPO}, False),
    ("no template", {"resources": [GITREPO]}, False),
    ("template without kind", {"resources": [GITREPO], "template": {"apiVersion": "v1"}},
     False),
    ("extra key", {"resources": [GITREPO], "template": GITREPO, "x": 1}, False),
]


@pytest.mark.parametrize(("row", "value", "ok"), K8S_ROWS, ids=[r[0] for r in K8S_ROWS])
def test_k8s_resource_template(row: str, value: Any, ok: bool) -> None:
    assert _ok("k8s-resource-template", value) is ok
