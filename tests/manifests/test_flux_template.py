"""The default Flux template: renders to valid, consistent manifests for every sample context.

Custom kinds are validated against ../shared/crds here; core kinds against kubernetes-validate in
test_core_kinds.py; the repo tree is built with kubectl kustomize in test_kustomize.py.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from fplus import manifests
from fplus.templating import render
from tests.manifests.crds import CustomResource
from tests.manifests.meta import CLUSTER_SCOPED_CORE, CONFIGMAP_KEY, meta_errors
from tests.manifests.samples import (
    CA_ENV,
    CONSUMED_KEYS,
    CONTEXTS,
    FLUX_GA,
    OPTIONAL_KEYS,
    find,
    objects,
    placeholders,
    render_flux,
    strings,
)

Rendered = dict[str, list[dict[str, Any]]]
MANAGED_BY = ("app.kubernetes.io/managed-by", "fplus-cluster-manager")
CREDENTIALS_DIR = "/etc/fplus/credentials"
ALL_VERBS = ["get", "list", "watch", "create", "update", "patch", "delete"]

# The whole inventory, in file order: (file, apiVersion, kind, name, namespace). Names and
# namespaces are context paths when they start with "@"; None = cluster-scoped.
INVENTORY = [
    ("self-link.yaml", "source.toolkit.fluxcd.io/v1", "GitRepository", "self-link", "@namespace"),
    ("self-link.yaml", "kustomize.toolkit.fluxcd.io/v1", "Kustomization", "self-link",
     "@namespace"),
    ("helm-charts.yaml", "source.toolkit.fluxcd.io/v1", "GitRepository", "helm-charts",
     "@namespace"),
    ("edge-sync.yaml", "v1", "ServiceAccount", "edge-sync", "@namespace"),
    ("edge-sync.yaml", "rbac.authorization.k8s.io/v1", "ClusterRole", "fplus-edge-sync-nodes",
     None),
    ("edge-sync.yaml", "rbac.authorization.k8s.io/v1", "ClusterRoleBinding",
     "fplus-edge-sync-nodes", None),
    ("edge-sync.yaml", "rbac.authorization.k8s.io/v1", "ClusterRole",
     "fplus-edge-sync-flux-status", None),
    ("edge-sync.yaml", "rbac.authorization.k8s.io/v1", "ClusterRoleBinding",
     "fplus-edge-sync-flux-status", None),
    ("edge-sync.yaml", "rbac.authorization.k8s.io/v1", "Role", "edge-sync", "@namespace"),
    ("edge-sync.yaml", "rbac.authorization.k8s.io/v1", "RoleBinding", "edge-sync", "@namespace"),
    ("edge-sync.yaml", "rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "fplus-tunnel-view",
     None),
    ("edge-sync.yaml", "rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "fplus-tunnel-edit",
     None),
    ("edge-sync.yaml", "rbac.authorization.k8s.io/v1", "ClusterRoleBinding",
     "fplus-tunnel-admin", None),
    ("edge-sync.yaml", "rbac.authorization.k8s.io/v1", "ClusterRole", "fplus-tunnel-nodes", None),
    ("edge-sync.yaml", "rbac.authorization.k8s.io/v1", "ClusterRoleBinding",
     "fplus-tunnel-nodes", None),
    ("edge-sync.yaml", "rbac.authorization.k8s.io/v1", "ClusterRole",
     "fplus-edge-sync-impersonate", None),
    ("edge-sync.yaml", "rbac.authorization.k8s.io/v1", "ClusterRoleBinding",
     "fplus-edge-sync-impersonate", None),
    ("edge-sync.yaml", "v1", "ConfigMap", "cluster-config", "@namespace"),
    ("edge-sync.yaml", "apps/v1", "Deployment", "edge-sync", "@namespace"),
    ("sealed-secrets.yaml", "v1", "Namespace", "@sealed_secrets.namespace", None),
    ("sealed-secrets.yaml", "rbac.authorization.k8s.io/v1", "Role", "edge-sync-sealed-secrets",
     "@sealed_secrets.namespace"),
    ("sealed-secrets.yaml", "rbac.authorization.k8s.io/v1", "RoleBinding",
     "edge-sync-sealed-secrets", "@sealed_secrets.namespace"),
    ("sealed-secrets.yaml", "helm.toolkit.fluxcd.io/v2", "HelmRelease", "sealed-secrets",
     "@namespace"),
    ("sealed-secrets-upstream.yaml", "source.toolkit.fluxcd.io/v1", "HelmRepository",
     "sealed-secrets", "@namespace"),
]


def _get(context: dict[str, Any], path: str) -> Any:
    value: Any = context
    for part in path.split("."):
        value = value[part]
    return value


def _resolve(context: dict[str, Any], value: str | None) -> str | None:
    return _get(context, value[1:]) if value and value.startswith("@") else value


# ---------------------------------------------------------------------------- the template itself

def test_template_consumes_exactly_the_documented_context_keys() -> None:
    assert placeholders(manifests.load("flux-template")) == CONSUMED_KEYS | OPTIONAL_KEYS


def test_header_comment_lists_every_consumed_key() -> None:
    text = (Path(manifests.__file__).parent / "flux-template.yaml").read_text(encoding="utf-8")
    header = text.split("\nself-link.yaml:")[0]
    for key in CONSUMED_KEYS | OPTIONAL_KEYS:
        assert key in header, key


@pytest.mark.parametrize("key", sorted(CONSUMED_KEYS))
def test_every_consumed_key_is_in_every_sample_context(key: str) -> None:
    for context in CONTEXTS.values():
        _get(context, key)


def test_template_has_no_defaults_that_would_hide_a_missing_key() -> None:
    found = [m for s in strings(manifests.load("flux-template"))
             for m in re.findall(r"{{([^{}]*)}}", s)]
    assert found
    assert [m for m in found if ":" in m] == []


def test_template_uses_only_flux_ga_apis() -> None:
    versions = {doc["apiVersion"] for _, doc in objects(render_flux({}))}
    assert {v for v in versions if "fluxcd.io" in v} <= FLUX_GA


# ---------------------------------------------------------------------------- rendered output

def test_inventory(rendered: Rendered, context: dict[str, Any]) -> None:
    got = [(file, doc["apiVersion"], doc["kind"], doc["metadata"]["name"],
            doc["metadata"].get("namespace")) for file, doc in objects(rendered)]
    want = [(file, api, kind, _resolve(context, name), _resolve(context, ns))
            for file, api, kind, name, ns in INVENTORY]
    assert got == want


def test_nothing_left_unrendered(rendered: Rendered) -> None:
    leftovers = [s for s in strings(rendered) if "{{" in s or "}}" in s]
    assert leftovers == []


def test_every_object_is_labelled_managed_by_us(rendered: Rendered) -> None:
    for _, doc in objects(rendered):
        assert doc["metadata"]["labels"][MANAGED_BY[0]] == MANAGED_BY[1], doc["kind"]


def test_custom_resources_validate_against_the_crds(
        rendered: Rendered, crds: dict[tuple[str, str], CustomResource]) -> None:
    custom = [doc for _, doc in objects(rendered) if (doc["apiVersion"], doc["kind"]) in crds]
    assert {doc["kind"] for doc in custom} == {"GitRepository", "Kustomization",
                                               "HelmRepository", "HelmRelease"}
    for doc in custom:
        errors = crds[doc["apiVersion"], doc["kind"]].errors(doc)
        assert errors == [], f"{doc['kind']}/{doc['metadata']['name']}: {errors}"


def test_every_group_we_use_is_either_core_or_has_a_crd(
        rendered: Rendered, crds: dict[tuple[str, str], CustomResource]) -> None:
    core = {"v1", "apps/v1", "rbac.authorization.k8s.io/v1"}
    for _, doc in objects(rendered):
        assert doc["apiVersion"] in core or (doc["apiVersion"], doc["kind"]) in crds, doc["kind"]


def test_object_metadata_is_valid_and_scoped_right(
        rendered: Rendered, crds: dict[tuple[str, str], CustomResource]) -> None:
    for _, doc in objects(rendered):
        crd = crds.get((doc["apiVersion"], doc["kind"]))
        namespaced = crd.namespaced if crd else doc["kind"] not in CLUSTER_SCOPED_CORE
        assert meta_errors(doc, namespaced=namespaced) == [], doc["kind"]


def test_no_duplicate_objects(rendered: Rendered) -> None:
    ids = [(doc["apiVersion"].split("/")[0], doc["kind"], doc["metadata"].get("namespace"),
            doc["metadata"]["name"]) for _, doc in objects(rendered)]
    assert len(ids) == len(set(ids))


def test_rendered_template_satisfies_the_flux_template_schema(rendered: Rendered) -> None:
    schema = manifests.load("schemas")["flux-template"]
    assert list(Draft202012Validator(schema).iter_errors(rendered)) == []


# ---------------------------------------------------------------------------- key facts

def test_self_link(rendered: Rendered, context: dict[str, Any]) -> None:
    ns = context["namespace"]
    repo = find(rendered, "GitRepository", "self-link", ns)
    assert repo["spec"] == {"interval": "3m", "ref": {"branch": "main"},
                            "secretRef": {"name": context["flux"]["secret"]},
                            "url": f"{context['url']['self']}"}
    assert repo["spec"]["url"].endswith(f"/uuid/{context['uuid']}")
    kustomization = find(rendered, "Kustomization", "self-link", ns)
    assert kustomization["spec"] == {"interval": "3m", "path": "./", "prune": True,
                                     "sourceRef": {"kind": "GitRepository", "name": "self-link"}}


def test_cluster_config(rendered: Rendered, context: dict[str, Any]) -> None:
    config = find(rendered, "ConfigMap", "cluster-config", context["namespace"])
    assert config["data"] == {
        "CLUSTER_UUID": context["uuid"],
        "CLUSTER_NAME": context["name"],
        "CONFIG_STORE_URL": context["url"]["config_store"],
        "SEALED_SECRETS_NAMESPACE": context["sealed_secrets"]["namespace"],
        "SEALED_SECRETS_CONTROLLER": context["sealed_secrets"]["controller"],
        # where Edge Sync opens its tunnel; absent (no tunnel) when the context has none
        **({"CLUSTER_MANAGER_URL": context["url"]["cluster_manager"]}
           if "cluster_manager" in context["url"] else {}),
    }
    assert all(isinstance(v, str) for v in config["data"].values())
    assert all(CONFIGMAP_KEY.fullmatch(k) for k in config["data"])


def test_edge_sync_deployment(rendered: Rendered, context: dict[str, Any]) -> None:
    deployment = find(rendered, "Deployment", "edge-sync", context["namespace"])
    labels = {"app.kubernetes.io/name": "edge-sync", MANAGED_BY[0]: MANAGED_BY[1],
              "factoryplus.app.amrc.co.uk/uuid": context["uuid"]}
    assert deployment["metadata"]["labels"] == labels
    spec = deployment["spec"]
    assert spec["replicas"] == 1
    assert spec["strategy"] == {"type": "Recreate"}
    selector = spec["selector"]["matchLabels"]
    pod = spec["template"]
    assert selector.items() <= pod["metadata"]["labels"].items()
    assert pod["metadata"]["labels"] == labels
    pod_spec = pod["spec"]
    assert pod_spec["serviceAccountName"] == "edge-sync"
    assert pod_spec["securityContext"]["runAsNonRoot"] is True
    assert pod_spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    [container] = pod_spec["containers"]
    assert container["image"] == context["edge_sync"]["image"]
    assert container["envFrom"] == [{"configMapRef": {"name": "cluster-config"}}]
    env = {e["name"]: e.get("valueFrom", e.get("value")) for e in container["env"]}
    private_ca = {CA_ENV["name"]: CA_ENV["value"]} if "ca_env" in context["edge_sync"] else {}
    assert env == {"FPLUS_USER_FILE": f"{CREDENTIALS_DIR}/username",
                   "FPLUS_PASSWORD_FILE": f"{CREDENTIALS_DIR}/password",
                   "POD_NAMESPACE": {"fieldRef": {"fieldPath": "metadata.namespace"}},
                   **private_ca}
    assert container["securityContext"] == {
        "runAsNonRoot": True, "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True, "capabilities": {"drop": ["ALL"]}}
    for kind in ("requests", "limits"):
        assert set(container["resources"][kind]) == {"cpu", "memory"}
    mounts = {m["name"] for m in container["volumeMounts"]}
    assert mounts <= {v["name"] for v in pod_spec["volumes"]}


def test_edge_sync_mounts_its_credentials_readable_by_its_user(
        rendered: Rendered, context: dict[str, Any]) -> None:
    """Files, not env: the kubelet updates a mounted Secret, so a rotation reaches the pod."""
    pod_spec = find(rendered, "Deployment", "edge-sync", context["namespace"])["spec"]["template"][
        "spec"]
    [container] = pod_spec["containers"]
    [mount] = [m for m in container["volumeMounts"] if m["mountPath"] == CREDENTIALS_DIR]
    assert mount["readOnly"] is True
    assert "subPath" not in mount and "subPathExpr" not in mount  # those are never updated
    [volume] = [v for v in pod_spec["volumes"] if v["name"] == mount["name"]]
    assert volume["secret"] == {"secretName": context["edge_sync"]["credentials_secret"],
                                "defaultMode": 0o440}
    # 0440 root:fsGroup: the container's uid reads the files through its group, others can't
    security = pod_spec["securityContext"]
    assert security["runAsUser"] == 65532 and security["runAsGroup"] == 65532
    assert security["fsGroup"] == 65532
    assert container["securityContext"]["readOnlyRootFilesystem"] is True


# (role kind, role name, namespace path, apiGroup, resource, verbs, resourceNames)
RBAC = [
    ("ClusterRole", "fplus-edge-sync-nodes", None, "", "nodes", ["get", "list", "watch"], None),
    ("Role", "edge-sync", "@namespace", "helm.toolkit.fluxcd.io", "helmreleases", ALL_VERBS,
     None),
    ("Role", "edge-sync", "@namespace", "source.toolkit.fluxcd.io", "gitrepositories", ALL_VERBS,
     None),
    ("Role", "edge-sync", "@namespace", "events.k8s.io", "events", ["list"], None),
    ("ClusterRole", "fplus-edge-sync-flux-status", None, "kustomize.toolkit.fluxcd.io",
     "kustomizations", ["get", "list"], None),
    ("ClusterRole", "fplus-edge-sync-flux-status", None, "helm.toolkit.fluxcd.io",
     "helmreleases", ["get", "list"], None),
    ("ClusterRole", "fplus-edge-sync-flux-status", None, "bitnami.com", "sealedsecrets",
     ["get", "list"], None),
    ("ClusterRole", "fplus-edge-sync-flux-status", None, "", "pods", ["list"], None),
    ("Role", "edge-sync-sealed-secrets", "@sealed_secrets.namespace", "", "services/proxy",
     ["get"], ["http:@:8080", "http:@:http", "http:@:", "@"]),
    ("Role", "edge-sync-sealed-secrets", "@sealed_secrets.namespace", "", "services", ["get"],
     ["@"]),
    ("Role", "edge-sync-sealed-secrets", "@sealed_secrets.namespace", "", "secrets",
     ["get", "list"], None),
    ("ClusterRole", "fplus-tunnel-nodes", None, "", "nodes", ["get", "list", "watch"], None),
    ("ClusterRole", "fplus-edge-sync-impersonate", None, "", "users", ["impersonate"],
     ["fplus:view", "fplus:edit", "fplus:admin"]),
    ("ClusterRole", "fplus-edge-sync-impersonate", None, "authentication.k8s.io",
     "userextras/fplus-principal", ["impersonate"], None),
]


@pytest.mark.parametrize("row", RBAC, ids=[f"{r[1]}:{r[4]}" for r in RBAC])
def test_rbac_rules(rendered: Rendered, context: dict[str, Any], row: tuple) -> None:
    kind, name, ns, group, resource, verbs, names = row
    role = find(rendered, kind, name, _resolve(context, ns))
    rules = [r for r in role["rules"] if resource in r["resources"]]
    assert len(rules) == 1
    [rule] = rules
    assert rule["apiGroups"] == [group]
    assert rule["resources"] == [resource]  # no cross product with other resources
    assert rule["verbs"] == verbs
    controller = context["sealed_secrets"]["controller"]
    expected_names = [n.replace("@", controller) for n in names] if names else None
    assert rule.get("resourceNames") == expected_names


def test_rbac_grants_nothing_else(rendered: Rendered) -> None:
    granted = {(doc["metadata"]["name"], group, resource, verb)
               for _, doc in objects(rendered) if doc["kind"] in ("Role", "ClusterRole")
               for rule in doc["rules"] for group in rule["apiGroups"]
               for resource in rule["resources"] for verb in rule["verbs"]}
    expected = {(name, group, resource, verb) for _, name, _, group, resource, verbs, _ in RBAC
                for verb in verbs}
    assert granted == expected
    assert not any("*" in item for item in granted)


def test_bindings_point_at_our_roles_and_service_account(rendered: Rendered,
                                                         context: dict[str, Any]) -> None:
    """Edge Sync's ServiceAccount is bound to our own roles; nothing else is bound to them."""
    bindings = [doc for _, doc in objects(rendered)
                if doc["kind"] in ("RoleBinding", "ClusterRoleBinding")
                and not doc["metadata"]["name"].startswith("fplus-tunnel-")]
    assert len(bindings) == 5
    for binding in bindings:
        ref = binding["roleRef"]
        assert ref["apiGroup"] == "rbac.authorization.k8s.io"
        find(rendered, ref["kind"], ref["name"], binding["metadata"].get("namespace"))
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "edge-sync",
                                        "namespace": context["namespace"]}]
    find(rendered, "ServiceAccount", "edge-sync", context["namespace"])


def test_sealed_secrets_release(rendered: Rendered, context: dict[str, Any]) -> None:
    ss = context["sealed_secrets"]
    ns = context["namespace"]
    repo = find(rendered, "HelmRepository", "sealed-secrets", ns)
    assert repo["spec"] == {"interval": "1h", "url": ss["repo_url"]}
    release = find(rendered, "HelmRelease", "sealed-secrets", ns)
    spec = release["spec"]
    assert spec["chart"]["spec"] == {
        "chart": "sealed-secrets", "version": ss["chart_version"],
        "sourceRef": {"kind": "HelmRepository", "name": "sealed-secrets"}}
    assert spec["targetNamespace"] == ss["namespace"]
    assert spec["install"]["createNamespace"] is True
    assert spec["values"] == {"fullnameOverride": ss["controller"]}
    namespace = find(rendered, "Namespace", ss["namespace"])
    assert namespace["metadata"]["annotations"] == {"kustomize.toolkit.fluxcd.io/prune": "disabled"}


def test_values_are_not_rendered_into_the_default_bundle() -> None:
    marker = {"marker-key": "marker-value"}
    base = CONTEXTS["defaults"]
    assert render(manifests.load("flux-template"), {**base, "values": marker}) == \
        render(manifests.load("flux-template"), base)


def test_a_missing_key_is_visible_in_the_output() -> None:
    """Why the renderer must supply every key: json-templates drops undefined whole values."""
    context = {k: v for k, v in CONTEXTS["defaults"].items() if k != "edge_sync"}
    deployment = find(render_flux(context), "Deployment", "edge-sync")
    assert "image" not in deployment["spec"]["template"]["spec"]["containers"][0]
