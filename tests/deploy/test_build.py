"""deploy/ builds with ``kubectl kustomize`` and every object is one the API server accepts:
``kubernetes-validate --strict`` for two Kubernetes versions, custom resources against the CRDs
in ``../shared/crds`` (read in place)."""

from __future__ import annotations

import copy
import re
from typing import Any
from urllib.parse import urlsplit

import kubernetes_validate
import pytest
from kubernetes_validate.utils import SchemaNotFoundError, ValidationError

from tests.deploy.conftest import DEPLOY, WORKLOAD_KINDS, Objects, containers, of_kind, pod_spec
from tests.manifests.crds import SHARED_CRDS, CustomResource, load_crds
from tests.shared_files import need

KUBERNETES_VERSIONS = ("1.29.0", "1.37.0")  # the oldest we support, the newest known


@pytest.fixture(scope="module")
def crds() -> dict[tuple[str, str], CustomResource]:
    return load_crds(need(SHARED_CRDS))


def _named(objects: Objects, kind: str) -> dict[str, dict[str, Any]]:
    return {obj["metadata"]["name"]: obj for obj in of_kind(objects, kind)}


@pytest.mark.parametrize("build", ["base", "example", "without-operator"])
def test_build_holds_the_central_stack(builds: dict[str, Objects], build: str) -> None:
    objects = builds[build]
    deployments = _named(objects, "Deployment")
    assert deployments["config-store"]["spec"]["replicas"] == 2
    assert deployments["cluster-manager"]["spec"]["replicas"] == 2
    git = _named(objects, "StatefulSet")["git-server"]
    assert [t["metadata"]["name"] for t in git["spec"]["volumeClaimTemplates"]] == ["data"]
    pdbs = {pdb["spec"]["selector"]["matchLabels"]["app.kubernetes.io/name"]
            for pdb in of_kind(objects, "PodDisruptionBudget")}
    assert pdbs == {"config-store", "cluster-manager"}
    assert {"config-store", "git-server", "cluster-manager"} <= set(_named(objects, "Service"))
    ingress = _named(objects, "Ingress")["fplus"]
    assert ingress["spec"]["tls"][0]["secretName"] == "fplus-tls"
    assert "default-deny-ingress" in _named(objects, "NetworkPolicy")
    assert set(_named(objects, "RoleBinding")) == {"cluster-manager-leader-election"}


def test_example_gets_postgres_from_the_operator(builds: dict[str, Objects]) -> None:
    cluster = _named(builds["example"], "Cluster")["fplus-db"]
    assert cluster["apiVersion"] == "postgresql.cnpg.io/v1"
    assert cluster["spec"]["instances"] >= 2
    assert cluster["metadata"]["namespace"] == "fplus"
    assert {obj["metadata"].get("namespace") for obj in builds["example"]
            if obj["kind"] != "Namespace"} == {"fplus"}


def test_without_operator_postgres_is_a_statefulset(builds: dict[str, Objects]) -> None:
    objects = builds["without-operator"]
    assert not of_kind(objects, "Cluster")
    database = _named(objects, "StatefulSet")["fplus-db"]
    service = _named(objects, "Service")["fplus-db-rw"]  # the host in the operator's `uri`
    assert service["spec"]["selector"] == database["spec"]["selector"]["matchLabels"]


def _is_builtin(obj: dict[str, Any]) -> bool:
    group = obj["apiVersion"].rpartition("/")[0]
    return "." not in group or group.endswith(".k8s.io")


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
@pytest.mark.parametrize("build", ["base", "example", "without-operator"])
def test_every_builtin_object_passes_strict_validation(builds: dict[str, Objects], build: str,
                                                      version: str) -> None:
    failures = []
    for obj in filter(_is_builtin, builds[build]):
        try:
            kubernetes_validate.validate(obj, version, strict=True)
        except (ValidationError, SchemaNotFoundError) as exc:
            failures.append(f"{obj['kind']}/{obj['metadata']['name']}: {exc}")
    assert failures == []


def test_strict_validation_rejects_an_unknown_field(builds: dict[str, Objects]) -> None:
    deployment = copy.deepcopy(_named(builds["base"], "Deployment")["config-store"])
    containers(pod_spec(deployment))[0]["readOnlyRootFileSystem"] = True  # a typo
    with pytest.raises(ValidationError):
        kubernetes_validate.validate(deployment, KUBERNETES_VERSIONS[0], strict=True)


@pytest.mark.parametrize("build", ["base", "example", "without-operator"])
def test_custom_resources_validate_against_the_crds(
        builds: dict[str, Objects], build: str,
        crds: dict[tuple[str, str], CustomResource]) -> None:
    custom = [obj for obj in builds[build] if not _is_builtin(obj)]
    if build == "example":
        assert [obj["kind"] for obj in custom] == ["Cluster"]
    for obj in custom:
        crd = crds.get((obj["apiVersion"], obj["kind"]))
        assert crd is not None, f"no CRD serves {obj['apiVersion']} {obj['kind']}"
        assert crd.errors(obj) == []


def test_crd_validation_rejects_a_wrong_cluster(builds: dict[str, Objects],
                                                crds: dict[tuple[str, str], CustomResource]
                                                ) -> None:
    cluster = copy.deepcopy(_named(builds["example"], "Cluster")["fplus-db"])
    cluster["spec"]["imageCatalogRef"] = {"apiGroup": "postgresql.cnpg.io",
                                          "kind": "ImageCatalog", "name": "c", "major": 16}
    cluster["spec"]["storage"]["sizeInGi"] = 10
    errors = crds[("postgresql.cnpg.io/v1", "Cluster")].errors(cluster)
    assert any("mutually exclusive" in e for e in errors)
    assert any("sizeInGi" in e for e in errors)


SECRET_LOOKING = re.compile(r"PASSWORD|TOKEN|SECRET|DATABASE|_URI$|_KEY$")


@pytest.mark.parametrize("build", ["base", "example", "without-operator"])
def test_secrets_are_referenced_never_inlined(builds: dict[str, Objects], build: str) -> None:
    objects = builds[build]
    assert not of_kind(objects, "Secret")
    for workload in of_kind(objects, *WORKLOAD_KINDS):
        for container in containers(pod_spec(workload)):
            for env in container.get("env", []):
                if SECRET_LOOKING.search(env["name"]):
                    assert "value" not in env, (workload["metadata"]["name"], env["name"])
                    assert "secretKeyRef" in env["valueFrom"], env["name"]
            line = " ".join(container.get("command", []) + container.get("args", []))
            assert not re.search(r"://[^/\s]*:[^/\s]*@|password=", line, re.I), line


def referenced_secrets(objects: Objects) -> set[str]:
    """Names of the Secrets the objects read (env, volumes, Ingress TLS)."""
    names = {tls["secretName"] for ingress in of_kind(objects, "Ingress")
             for tls in ingress["spec"].get("tls", [])}
    for workload in of_kind(objects, *WORKLOAD_KINDS):
        spec = pod_spec(workload)
        names |= {v["secret"]["secretName"] for v in spec.get("volumes", []) if "secret" in v}
        names |= {env["valueFrom"]["secretKeyRef"]["name"] for c in containers(spec)
                  for env in c.get("env", []) if "secretKeyRef" in env.get("valueFrom", {})}
    return names


def test_every_referenced_secret_is_made_in_docs_deploy_md(builds: dict[str, Objects]) -> None:
    docs = (DEPLOY.parent / "docs" / "deploy.md").read_text(encoding="utf-8")
    created = set(re.findall(r"kubectl -n fplus create secret \S+ (\S+)", docs))
    made_by_operator = {"fplus-db-app"}  # CloudNativePG writes it
    assert referenced_secrets(builds["example"]) == created | made_by_operator
    assert referenced_secrets(builds["without-operator"]) == created | made_by_operator


def test_ingress_hosts_follow_the_endpoint_urls(builds: dict[str, Objects]) -> None:
    objects = builds["example"]
    [endpoints] = [cm for cm in of_kind(objects, "ConfigMap")
                   if cm["metadata"]["name"].startswith("fplus-endpoints")]
    hosts = [urlsplit(url).hostname for url in endpoints["data"].values()]
    assert "fplus.example" not in " ".join(hosts)  # the base's placeholders are gone
    ingress = _named(objects, "Ingress")["fplus"]
    assert sorted(rule["host"] for rule in ingress["spec"]["rules"]) == sorted(hosts)
    assert sorted(ingress["spec"]["tls"][0]["hosts"]) == sorted(hosts)
    manager = _named(objects, "Deployment")["cluster-manager"]
    [container] = pod_spec(manager)["containers"]
    from_config = {env["name"] for env in container["env"]
                   if env.get("valueFrom", {}).get("configMapKeyRef", {}).get("name")
                   == endpoints["metadata"]["name"]}
    assert from_config == set(endpoints["data"])
    assert {f"$({name})" for name in from_config} <= set(container["command"])
