"""The emulator's additions for kubectl behave as documented (so the script tests mean something).

Each test drives the real kubectl against :class:`~tests.bootstrap.apiserver.KubectlKubernetes`;
the numbers refer to the additions listed in apiserver.py.
"""

from __future__ import annotations

import json
import threading
import time

import requests

from tests.bootstrap.apiserver import version_priority
from tests.bootstrap.cluster import DEPLOYMENTS, EdgeCluster

REPO = """\
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: self-link, namespace: edge}
spec: {interval: 3m, url: "http://git/x"}
"""
SECRET = """\
apiVersion: v1
kind: Secret
metadata: {name: creds, namespace: edge}
stringData: {password: "s3cret"}
"""


def test_get_nodes_and_namespaces(edge: EdgeCluster) -> None:  # 1, 2, 5
    done = edge.kubectl("get", "nodes")
    assert (done.returncode, done.stdout.split()[:3]) == (0, ["NAME", "AGE", "edge-node-1"])
    assert edge.kubectl("config", "current-context").stdout == "edge-admin@line\n"
    assert edge.kubectl("create", "namespace", "edge").stdout == "namespace/edge created\n"
    again = edge.kubectl("create", "namespace", "edge")
    assert (again.returncode, again.stderr) == (
        1, 'Error from server (AlreadyExists): namespaces "edge" already exists\n')
    missing = edge.kubectl("get", "namespace", "nope")
    assert missing.stderr == 'Error from server (NotFound): namespaces "nope" not found\n'
    assert "Warning" not in edge.kubectl("get", "crd").stderr  # no ambiguous short name


def test_objects_need_their_namespace_and_crd(edge: EdgeCluster) -> None:  # 3, 8, 11
    (edge.root / "repo.yaml").write_text(REPO)
    done = edge.kubectl("apply", "-f", "repo.yaml")
    assert done.returncode == 1
    assert 'no matches for kind "GitRepository" in version "source.toolkit.fluxcd.io/v1"' \
        in done.stderr
    edge.add_crd("gitrepositories.source.toolkit.fluxcd.io", ["v1", "v1beta2"])
    done = edge.kubectl("apply", "-f", "repo.yaml")
    assert 'namespaces "edge" not found' in done.stderr
    edge.add_namespace("edge")
    assert edge.kubectl("apply", "-f", "repo.yaml").stdout == \
        "gitrepository.source.toolkit.fluxcd.io/self-link created\n"
    assert edge.kubectl("apply", "-f", "repo.yaml").stdout == \
        "gitrepository.source.toolkit.fluxcd.io/self-link unchanged\n"
    got = edge.kubectl("-n", "edge", "get", "gitrepository", "self-link", "-o", "json")
    assert json.loads(got.stdout)["apiVersion"] == "source.toolkit.fluxcd.io/v1"  # preferred


def test_server_side_apply_turns_string_data_into_data(edge: EdgeCluster) -> None:  # 9
    edge.add_namespace("edge")
    (edge.root / "secret.yaml").write_text(SECRET)
    done = edge.kubectl("apply", "--server-side", "--field-manager=t", "-f", "secret.yaml")
    assert done.stdout == "secret/creds serverside-applied\n", done.stderr
    assert edge.secrets("edge") == {"creds": {"password": "s3cret"}}
    assert "stringData" not in edge.objects("v1/secrets", "edge")["creds"]


def test_wait_watches_until_the_condition_is_met(edge: EdgeCluster) -> None:  # 6, 7
    edge.controllers.hold.add("deployment/app")
    edge.add_namespace("edge")
    edge.add_deployment("edge", "app")
    edge.add_deployment("edge", "other")  # filtered out by the field selector
    timed_out = edge.kubectl("-n", "edge", "wait", "--for=condition=Available",
                             "--timeout=1s", "deployment/app")
    assert "timed out waiting for the condition" in timed_out.stderr

    def available_later() -> None:
        time.sleep(1.0)
        edge.controllers.hold.discard("deployment/app")

    threading.Thread(target=available_later).start()
    start = time.monotonic()
    done = edge.kubectl("-n", "edge", "wait", "--for=condition=Available", "--timeout=20s",
                        "deployment/app")
    assert done.stdout == "deployment.apps/app condition met\n", done.stderr
    assert time.monotonic() - start >= 0.9  # it did wait: the answer came by the watch


def test_rollout_restart_is_a_strategic_merge_patch(edge: EdgeCluster) -> None:  # 10
    edge.add_namespace("edge")
    edge.add_deployment("edge", "app")
    done = edge.kubectl("-n", "edge", "rollout", "restart", "deployment/app")
    assert done.stdout == "deployment.apps/app restarted\n", done.stderr
    template = edge.objects(DEPLOYMENTS, "edge")["app"]["spec"]["template"]
    assert "kubectl.kubernetes.io/restartedAt" in template["metadata"]["annotations"]
    assert template["spec"]["containers"] == [{"name": "app", "image": "app:1"}]
    assert not [k for k in json.dumps(template) if k == "$"]


def test_openapi_documents(edge: EdgeCluster) -> None:  # 11
    base = f"http://127.0.0.1:{edge.kube.direct_port}"
    assert requests.get(base + "/openapi/v2", timeout=10).content.startswith(b"\x0a\x032.0")
    paths = requests.get(base + "/openapi/v3", timeout=10).json()["paths"]
    doc = requests.get(base + paths["apis/apps/v1"]["serverRelativeURL"], timeout=10).json()
    patch = doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"]
    assert patch["x-kubernetes-group-version-kind"] == {
        "group": "apps", "version": "v1", "kind": "Deployment"}
    assert {"name": "fieldValidation", "in": "query"}.items() <= patch["parameters"][0].items()


def test_protobuf_bodies_other_than_namespaces_are_refused(edge: EdgeCluster) -> None:  # 2
    edge.add_namespace("edge")
    done = edge.kubectl("-n", "edge", "create", "secret", "generic", "x", "--from-literal=a=b")
    assert "only Namespaces are understood in protobuf" in done.stderr  # never the script's


def test_version_priority() -> None:  # 1
    assert sorted(["v1beta2", "v1alpha1", "v2", "v1", "v10", "foo", "v2beta1"],
                  key=version_priority) == ["v10", "v2", "v1", "v2beta1", "v1beta2",
                                            "v1alpha1", "foo"]
