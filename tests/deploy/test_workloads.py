"""Every workload in deploy/ runs locked down, within limits, and runs commands that exist:
each container's command line parses with the real CLI parser, the Lease RBAC grants what
the leader election code calls, and the central image is the one ``make images`` builds."""

from __future__ import annotations

import configparser
import re
import shlex
from pathlib import Path
from typing import Any

import pytest

from fplus.cluster_manager.model.settings import Settings
from tests.deploy.cli_parse import parse_command_lines
from tests.deploy.conftest import WORKLOAD_KINDS, Objects, containers, of_kind, pod_spec

ROOT = Path(__file__).resolve().parents[2]
BUILDS = ["base", "example", "without-operator"]


def _effective(pod: dict[str, Any], container: dict[str, Any], key: str) -> Any:
    """A securityContext setting, the container's overriding the pod's."""
    own = container.get("securityContext", {})
    return own[key] if key in own else pod.get("securityContext", {}).get(key)


def insecurities(spec: dict[str, Any]) -> list[str]:
    """What in a pod spec breaks the deployment's rules (empty: none)."""
    problems = []
    for c in containers(spec):
        sc, name = c.get("securityContext", {}), c["name"]
        user = _effective(spec, c, "runAsUser")
        if _effective(spec, c, "runAsNonRoot") is not True or not isinstance(user, int) \
                or user == 0:
            problems.append(f"{name}: not a numeric non-root user")
        if sc.get("allowPrivilegeEscalation") is not False:
            problems.append(f"{name}: privilege escalation allowed")
        if sc.get("readOnlyRootFilesystem") is not True:
            problems.append(f"{name}: writable root filesystem")
        if sc.get("capabilities", {}).get("drop") != ["ALL"] or sc["capabilities"].get("add"):
            problems.append(f"{name}: capabilities not all dropped")
        if (_effective(spec, c, "seccompProfile") or {}).get("type") != "RuntimeDefault":
            problems.append(f"{name}: no RuntimeDefault seccomp profile")
        if sc.get("privileged"):
            problems.append(f"{name}: privileged")
        for kind in ("requests", "limits"):
            if set(c.get("resources", {}).get(kind, {})) < {"cpu", "memory"}:
                problems.append(f"{name}: no cpu and memory {kind}")
        if ":" not in c["image"].rpartition("/")[2] or c["image"].endswith(":latest"):
            problems.append(f"{name}: image without a pinned tag")
    if spec.get("hostNetwork") or spec.get("hostPID") or spec.get("hostIPC"):
        problems.append("pod shares a host namespace")
    if any("hostPath" in volume for volume in spec.get("volumes", [])):
        problems.append("pod mounts a hostPath")
    return problems


def _workloads(objects: Objects) -> Objects:
    return of_kind(objects, *WORKLOAD_KINDS)


@pytest.mark.parametrize("build", BUILDS)
def test_every_workload_is_locked_down(builds: dict[str, Objects], build: str) -> None:
    workloads = _workloads(builds[build])
    assert len(workloads) >= 3
    found = {w["metadata"]["name"]: insecurities(pod_spec(w)) for w in workloads}
    assert found == {name: [] for name in found}


def test_the_rules_catch_an_insecure_pod() -> None:
    spec = {"hostNetwork": True, "volumes": [{"name": "h", "hostPath": {"path": "/"}}],
            "securityContext": {"runAsUser": 0},
            "containers": [{"name": "c", "image": "busybox:latest",
                            "securityContext": {"privileged": True,
                                                "capabilities": {"add": ["NET_ADMIN"]}},
                            "resources": {"requests": {"cpu": "1"}}}]}
    assert insecurities(spec) == [
        "c: not a numeric non-root user", "c: privilege escalation allowed",
        "c: writable root filesystem", "c: capabilities not all dropped",
        "c: no RuntimeDefault seccomp profile", "c: privileged",
        "c: no cpu and memory requests", "c: no cpu and memory limits",
        "c: image without a pinned tag", "pod shares a host namespace", "pod mounts a hostPath"]


def test_the_root_filesystem_is_read_only_so_tmp_and_data_are_volumes(
        builds: dict[str, Objects]) -> None:
    for workload in _workloads(builds["example"]):
        spec = pod_spec(workload)
        claimed = {t["metadata"]["name"] for t in workload["spec"].get("volumeClaimTemplates", [])}
        volumes = {v["name"] for v in spec.get("volumes", [])} | claimed
        for c in containers(spec):
            mounts = {m["mountPath"]: m["name"] for m in c.get("volumeMounts", [])}
            assert "/tmp" in mounts, (workload["metadata"]["name"], c["name"])
            assert set(mounts.values()) <= volumes


def command_lines(container: dict[str, Any]) -> list[list[str]]:
    """The central-service command lines a container runs (through ``sh -c`` too)."""
    argv = [*container.get("command", []), *container.get("args", [])]
    if argv[:2] == ["sh", "-c"]:
        return [shlex.split(part)[1:] for part in argv[2].split("&&")
                if part.strip().startswith("exec ")]
    return [argv]


def _central_containers(objects: Objects) -> list[dict[str, Any]]:
    return [c for w in _workloads(objects) for c in containers(pod_spec(w))
            if "/central:" in c["image"]]


def _central_command_lines(objects: Objects) -> list[list[str]]:
    """Every central command line, ``$(VAR)`` references replaced by a URL as the kubelet
    would replace them."""
    return [[re.sub(r"\$\((\w+)\)", "https://h.example", arg) for arg in argv]
            for container in _central_containers(objects) for argv in command_lines(container)]


@pytest.mark.parametrize("build", BUILDS)
def test_every_central_command_line_parses_with_the_real_cli(builds: dict[str, Objects],
                                                             build: str) -> None:
    lines = _central_command_lines(builds[build])
    parsed = parse_command_lines(lines)
    assert [p.get("error") for p in parsed] == [None] * len(lines)
    assert {(argv[0], p["command"]) for argv, p in zip(lines, parsed, strict=True)} == {
        ("config-store", "serve"), ("git-server", "seed"), ("git-server", "serve"),
        ("cluster-manager", "seed"), ("cluster-manager", "serve")}


def test_a_wrong_flag_or_command_would_be_caught() -> None:
    wrong = parse_command_lines([["git-server", "serve", "--data-dir", "/d", "--repos", "/r"],
                                 ["config-store", "seed", "--data-dir", "/d"],
                                 ["git-sever", "serve"]])
    assert "unrecognized arguments: --repos /r" in wrong[0]["error"]
    assert "invalid choice: 'seed'" in wrong[1]["error"]
    assert wrong[2] == {"error": "git-sever is no service command"}


def test_cluster_manager_is_leader_elected_with_just_the_rbac_it_needs(
        builds: dict[str, Objects]) -> None:
    objects = builds["example"]
    [manager] = [w for w in _workloads(objects) if w["metadata"]["name"] == "cluster-manager"]
    [serve] = [argv for argv in _central_command_lines([manager]) if argv[1] == "serve"]
    [args] = parse_command_lines([serve])
    assert args["leader_election"] == "kubernetes"
    assert args["git_repos"] is None and args["git_internal"] == "http://git-server:8702"
    source = (ROOT / "fplus" / "cluster_manager" / "leader" / "kubernetes_lease.py").read_text()
    calls = set(re.findall(r"\.(\w+)_namespaced_lease\(", source))
    verbs = {"read": "get", "create": "create", "replace": "update", "patch": "patch",
             "delete": "delete", "list": "list"}
    needed = {verbs[call] for call in calls}
    [role] = of_kind(objects, "Role")
    granted = {verb for rule in role["rules"] if rule["resources"] == ["leases"]
               for verb in rule["verbs"]}
    assert needed == granted == {"get", "create", "update"}
    assert all(rule["apiGroups"] == ["coordination.k8s.io"] for rule in role["rules"])
    named = [rule for rule in role["rules"] if "update" in rule["verbs"]]
    assert all(rule.get("resourceNames") == [args["lease_name"]] for rule in named)
    [binding] = of_kind(objects, "RoleBinding")
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "cluster-manager",
                                    "namespace": "fplus"}]
    assert pod_spec(manager)["serviceAccountName"] == "cluster-manager"


def _make_images() -> tuple[str, str]:
    """(registry, version) as the Makefile's ``images`` target names the images."""
    makefile = (ROOT / "Makefile").read_text()
    registry = re.search(r"^REGISTRY \?= (\S+)$", makefile, re.M)
    assert registry and "$(REGISTRY)/central:$(VERSION)" in makefile
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    return registry.group(1), config["metadata"]["version"]


def test_images_are_the_ones_make_images_builds(builds: dict[str, Objects]) -> None:
    registry, version = _make_images()
    images = {c["image"] for c in _central_containers(builds["example"])}
    assert images == {f"{registry}/central:{version}"}
    assert Settings.edge_sync_image == f"{registry}/edge-sync:{version}"
