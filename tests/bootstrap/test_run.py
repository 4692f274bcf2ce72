"""The whole default script run with sh and the real kubectl against an emulated edge cluster.

The cluster is kmock 0.8 plus the additions kubectl needs; the gaps patched (details and the
kubectl command each serves in tests/bootstrap/apiserver.py): 1 core discovery groupVersion,
subresource short names, preferred versions; 2 ``/api/v1/namespaces`` paths; 3 namespace must
exist; 4 NotFound/AlreadyExists errors; 5 typed lists; 6 field selectors; 7 JSON watch
streams; 8 CRDs served in discovery; 9 Secret ``stringData``; 10 strategic merge patches;
11 OpenAPI v2/v3 documents; 12 protobuf Namespace bodies. No controller runs: the tests
set CRDs Established, Deployments Available and Kustomizations Ready as they appear
(cluster.py). Every run also checks that the script's temp dir is gone afterwards.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.bootstrap.cluster import (
    CRDS,
    DEPLOYMENTS,
    KUSTOMIZATIONS,
    NAMESPACES,
    SECRETS,
    EdgeCluster,
    FileServer,
    Run,
)
from tests.bootstrap.edge import FLUX_APIS, script, secrets_for, tools_without_kubectl
from tests.manifests.crds import CustomResource
from tests.manifests.meta import meta_errors
from tests.manifests.samples import CONTEXTS
from tests.shared_files import FLUX_INSTALL, need

kubernetes_validate = pytest.importorskip("kubernetes_validate")

NS = CONTEXTS["defaults"]["namespace"]
GIT_REPOSITORIES = "source.toolkit.fluxcd.io/v1/gitrepositories"
GA_FLUX = {crd: ["v1beta2", version] if version == "v1" else ["v2beta2", version]
           for crd, version in FLUX_APIS.items()}
RESTARTED_AT = "kubectl.kubernetes.io/restartedAt"


@functools.cache
def flux_objects() -> list[tuple[str, str | None, str]]:
    """Every object of the pinned Flux release: (kind, namespace, name)."""
    return [(d["kind"], (d["metadata"].get("namespace")), d["metadata"]["name"])
            for d in yaml.safe_load_all(need(FLUX_INSTALL).read_text(encoding="utf-8")) if d]


def succeeded(run: Run) -> None:
    assert (run.returncode, run.stdout.splitlines()[-1:]) == (0, ["Done."]), run.stderr


def failed(run: Run, message: str, code: int = 1) -> None:
    assert run.returncode == code, (run.stdout, run.stderr)
    assert message in run.stderr
    assert "Done." not in run.stdout


def flux_installed(edge: EdgeCluster) -> bool:
    """Every object of the Flux release exists (its controllers, namespace and CRDs)."""
    return all(edge.has(_resource(kind), namespace, name)
               for kind, namespace, name in flux_objects())


def _resource(kind: str) -> str:
    return {"Namespace": NAMESPACES, "CustomResourceDefinition": CRDS,
            "Deployment": DEPLOYMENTS, "ServiceAccount": "v1/serviceaccounts",
            "Service": "v1/services", "ResourceQuota": "v1/resourcequotas",
            "NetworkPolicy": "networking.k8s.io/v1/networkpolicies",
            "ClusterRole": "rbac.authorization.k8s.io/v1/clusterroles",
            "ClusterRoleBinding": "rbac.authorization.k8s.io/v1/clusterrolebindings"}[kind]


def self_linked(edge: EdgeCluster, namespace: str = NS) -> bool:
    return edge.has(GIT_REPOSITORIES, namespace, "self-link") and \
        edge.has(KUSTOMIZATIONS, namespace, "self-link")


def namespace_created(run: Run, namespace: str = NS) -> bool:
    return any(d["metadata"]["name"] == namespace for d in run.applied("Namespace"))


def restarted_at(edge: EdgeCluster, namespace: str = NS) -> str | None:
    deployment = edge.objects(DEPLOYMENTS, namespace)["edge-sync"]
    annotations = deployment["spec"]["template"].get("metadata", {}).get("annotations") or {}
    return annotations.get(RESTARTED_AT)


# ---------------------------------------------------------------------------- twice, from scratch

@pytest.fixture(scope="module", params=["defaults", "shared-namespace"])
def two_runs(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
             flux_url: str, flux_release: FileServer,
             ) -> Iterator[tuple[str, Run, Run, EdgeCluster, int]]:
    """The same script run twice with -y on one fresh cluster (and Flux downloads made)."""
    edge = EdgeCluster(tmp_path_factory.mktemp("edge"))
    fetched = len(flux_release.fetched)
    text = script(request.param, flux_url=flux_url)
    try:
        first, second = edge.run(text, "-y"), edge.run(text, "-y")
        yield request.param, first, second, edge, len(flux_release.fetched) - fetched
    finally:
        edge.close()


def test_first_run_creates_the_namespace_and_installs_flux(two_runs: Any, flux_url: str) -> None:
    sample, first, _, edge, downloads = two_runs
    succeeded(first)
    assert namespace_created(first, CONTEXTS[sample]["namespace"])
    assert flux_installed(edge)
    assert downloads == 1  # the first run only
    assert f"Installing Flux 2.7.5 from {flux_url}" in first.stdout
    assert "Restarting Edge Sync" not in first.stdout  # there is none yet


def test_files_are_written_to_a_temp_dir_that_is_gone_afterwards(two_runs: Any) -> None:
    _, first, second, _, _ = two_runs
    for run in (first, second):
        [files] = run.temp_dirs.values()  # one mktemp -d under TMPDIR, gone afterwards
        assert {"bootstrap.sh", "self-link.yaml", "credentials.yaml"} <= files.keys()
        assert set(files.values()) <= {0o700, 0o600}  # umask 077: the passwords stay private
    assert first.temp_dirs.keys() != second.temp_dirs.keys()


def test_second_run_skips_namespace_and_flux(two_runs: Any) -> None:
    sample, _, second, _, _ = two_runs
    ns = CONTEXTS[sample]["namespace"]
    succeeded(second)
    assert not namespace_created(second, ns)
    assert f"Namespace {ns} exists." in second.stdout
    assert "Flux is already installed" in second.stdout
    written = {path for method, path in second.changes}
    assert written == {f"/api/v1/namespaces/{ns}/secrets/{name}"
                       for name in secrets_for(CONTEXTS[sample])}  # self-link: unchanged


def test_the_cluster_ends_with_everything(two_runs: Any) -> None:
    sample_name, _, _, edge, _ = two_runs
    sample = CONTEXTS[sample_name]
    ns = sample["namespace"]
    assert edge.has(NAMESPACES, None, ns)
    assert self_linked(edge, ns)
    assert edge.has(DEPLOYMENTS, "flux-system", "helm-controller")
    assert edge.secrets(ns) == {name: {"username": user, "password": password}
                                for name, (user, password) in secrets_for(sample).items()}
    for secret in edge.objects(SECRETS, ns).values():  # server-side apply: no copy of the
        assert "annotations" not in secret["metadata"]  # passwords in last-applied


def test_applied_manifests_validate(two_runs: Any,
                                    crds: dict[tuple[str, str], CustomResource]) -> None:
    sample_name, first, second, edge, _ = two_runs
    sample = CONTEXTS[sample_name]
    for run in (first, second):
        secrets = run.applied("Secret")
        assert [s["metadata"]["name"] for s in secrets] == list(secrets_for(sample))
        for doc in secrets:
            kubernetes_validate.validate(doc, kubernetes_validate.latest_version(), strict=True)
            assert meta_errors(doc, namespaced=True) == []
            user, password = secrets_for(sample)[doc["metadata"]["name"]]
            assert doc["stringData"] == {"username": user, "password": password}
    applied = first.applied("GitRepository") + first.applied("Kustomization")
    stored = [edge.objects(GIT_REPOSITORIES, sample["namespace"])["self-link"],
              edge.objects(KUSTOMIZATIONS, sample["namespace"])["self-link"]]
    assert [(d["kind"], d["metadata"]["name"]) for d in applied] == [
        ("GitRepository", "self-link"), ("Kustomization", "self-link")]
    for doc in [*applied, *stored]:
        body = {k: v for k, v in doc.items() if k != "status"}
        assert crds[doc["apiVersion"], doc["kind"]].errors(body) == []
        assert meta_errors(body, namespaced=True) == []
        assert doc["metadata"]["namespace"] == sample["namespace"]
    repo = stored[0]
    assert repo["spec"]["secretRef"] == {"name": sample["flux"]["secret"]}
    assert repo["spec"]["url"].endswith(f"/uuid/{sample['uuid']}")


# ---------------------------------------------------------------------------- variants

def test_air_gapped_applies_the_embedded_flux(edge: EdgeCluster,
                                              flux_release: FileServer) -> None:
    fetched = len(flux_release.fetched)
    run = edge.run(script(air_gapped=True, flux_url="http://127.0.0.1:9/unreachable"), "-y")
    succeeded(run)
    assert flux_installed(edge) and self_linked(edge)
    assert len(flux_release.fetched) == fetched
    assert "from the manifests in this script" in run.stdout


def test_flux_unreachable_stops_before_the_self_link(edge: EdgeCluster, flux_url: str) -> None:
    run = edge.run(script(flux_url=flux_url.replace("install.yaml", "missing.yaml")), "-y")
    failed(run, "Installing Flux failed.")
    assert not edge.has(CRDS, None, "gitrepositories.source.toolkit.fluxcd.io")
    assert not self_linked(edge)
    assert set(edge.secrets(NS)) == set(secrets_for(CONTEXTS["defaults"]))


def test_public_script_needs_the_secrets(edge: EdgeCluster, flux_url: str) -> None:
    run = edge.run(script(credentials=False, flux_url=flux_url), "-y")
    failed(run, "Secret(s) flux-secrets edge-sync-credentials missing in namespace fplus-edge")
    assert "carries no credentials" in run.stderr
    assert run.changes == []


def test_public_script_names_only_the_missing_secret(edge: EdgeCluster, flux_url: str) -> None:
    edge.add_namespace(NS)
    edge.add_secret(NS, "flux-secrets", {"username": "u", "password": "p"})
    run = edge.run(script(credentials=False, flux_url=flux_url), "-y")
    failed(run, "Secret(s) edge-sync-credentials missing")
    assert run.changes == []


def test_public_script_uses_existing_secrets(edge: EdgeCluster, flux_url: str) -> None:
    edge.add_namespace(NS)
    for name in ("flux-secrets", "edge-sync-credentials"):
        edge.add_secret(NS, name, {"username": "kept", "password": "kept"})
    run = edge.run(script(credentials=False, flux_url=flux_url), "-y")
    succeeded(run)
    assert "Using the existing Secrets flux-secrets and edge-sync-credentials." in run.stdout
    assert not namespace_created(run)
    assert not [path for _, path in run.changes if "/secrets/" in path]
    assert edge.secrets(NS)["flux-secrets"] == {"username": "kept", "password": "kept"}
    assert flux_installed(edge) and self_linked(edge)


def test_compatible_flux_is_kept(edge: EdgeCluster, flux_release: FileServer,
                                 flux_url: str) -> None:
    edge.install_flux(GA_FLUX)
    fetched = len(flux_release.fetched)
    run = edge.run(script(flux_url=flux_url), "-y")
    succeeded(run)
    assert len(flux_release.fetched) == fetched
    assert not edge.has(DEPLOYMENTS, "flux-system", "source-controller")  # not installed
    assert namespace_created(run) and self_linked(edge)
    assert set(edge.secrets(NS)) == set(secrets_for(CONTEXTS["defaults"]))


INCOMPATIBLE = {
    "all beta (Flux 2.0)": {"gitrepositories.source.toolkit.fluxcd.io": ["v1beta2"],
                            "helmrepositories.source.toolkit.fluxcd.io": ["v1beta2"],
                            "kustomizations.kustomize.toolkit.fluxcd.io": ["v1beta2"],
                            "helmreleases.helm.toolkit.fluxcd.io": ["v2beta1"]},
    # ACS tested `! a && b && c`: the first API missing and the rest present passed
    **{f"no {crd.split('.')[0]} {version}": {**GA_FLUX, crd: ["v1beta2", "v2beta2"]}
       for crd, version in FLUX_APIS.items()},
    "no helmreleases CRD": {c: v for c, v in GA_FLUX.items() if "helmreleases" not in c},
}


@pytest.mark.parametrize("served", INCOMPATIBLE.values(), ids=INCOMPATIBLE)
def test_incompatible_flux_aborts_before_any_change(edge: EdgeCluster, flux_url: str,
                                                    served: dict[str, list[str]]) -> None:
    edge.install_flux(served)
    run = edge.run(script(flux_url=flux_url), "-y")
    failed(run, "Flux is installed but too old for this cluster's manifests.\n"
                "Upgrade Flux to 2.7.5")
    assert run.changes == []
    assert run.requests and all(method == "GET" for method, _ in run.requests)


def test_old_crds_without_flux_running_are_upgraded(edge: EdgeCluster, flux_url: str) -> None:
    for crd in FLUX_APIS:
        edge.add_crd(crd, ["v1beta2"])
    run = edge.run(script(flux_url=flux_url), "-y")
    succeeded(run)
    for crd, version in FLUX_APIS.items():
        served = [v["name"] for v in edge.objects(CRDS)[crd]["spec"]["versions"] if v["served"]]
        assert version in served, crd
    assert flux_installed(edge) and self_linked(edge)


def test_unreachable_cluster(edge: EdgeCluster, flux_url: str) -> None:
    with edge.kube.outage():
        run = edge.run(script(flux_url=flux_url), "-y")
    failed(run, "Cannot reach the cluster. Maybe you need to set KUBECONFIG?")
    assert run.requests == []


def test_flux_not_available_in_time(edge: EdgeCluster, flux_url: str) -> None:
    """The timeout bounds each wait of the script, the CRDs' first: 5 s leaves a loaded
    machine time to establish them (at 2 s the CRD wait timed out first under load)."""
    edge.controllers.hold.add("deployment/helm-controller")
    run = edge.run(script(flux_url=flux_url, timeout="5s"), "-y")
    failed(run, "The Flux controllers did not become available within 5s; see\n"
                "  kubectl -n flux-system get pods")
    assert not self_linked(edge)


def test_self_link_not_ready_in_time(edge: EdgeCluster, flux_url: str) -> None:
    edge.controllers.hold.add("kustomization/self-link")
    run = edge.run(script(flux_url=flux_url, timeout="5s"), "-y")  # 5 s: as above
    failed(run, "The cluster's repo was not applied within 5s.")
    for hint in (f"kubectl -n {NS} describe kustomization self-link",
                 f"kubectl -n {NS} describe gitrepository self-link"):
        assert hint in run.stderr
    assert flux_installed(edge) and self_linked(edge)


def test_no_kubectl(edge: EdgeCluster, tmp_path: Path) -> None:
    run = edge.run(script(), "-y", path=tools_without_kubectl(tmp_path))
    failed(run, "kubectl not found on PATH")
    assert run.requests == []


@pytest.mark.parametrize("args", [["-x"], ["-y", "-q"], ["extra"], ["-y", "--", "extra"]])
def test_bad_arguments(edge: EdgeCluster, args: list[str]) -> None:
    run = edge.run(script(), *args)
    failed(run, "Usage: sh bootstrap.sh [-y] [-r] [-h]", code=2)
    assert run.requests == []


def test_help(edge: EdgeCluster) -> None:
    run = edge.run(script(), "-h")
    assert run.returncode == 0
    assert run.stdout.startswith("Usage: sh bootstrap.sh [-y] [-r] [-h]\n")
    assert "Installs edge cluster shop-floor" in run.stdout
    assert run.requests == []


# ---------------------------------------------------------------------------- Edge Sync restart

def test_new_credentials_restart_a_running_edge_sync(edge: EdgeCluster, flux_url: str) -> None:
    edge.install_flux(GA_FLUX)
    edge.add_namespace(NS)
    edge.add_deployment(NS, "edge-sync")
    run = edge.run(script(flux_url=flux_url), "-y")
    succeeded(run)
    assert "Restarting Edge Sync (deployment/edge-sync) to use its new credentials." in run.stdout
    assert restarted_at(edge) is not None
    writes = [path for _, path in run.changes]
    restart = f"/apis/apps/v1/namespaces/{NS}/deployments/edge-sync"
    assert restart in writes
    assert all(writes.index(f"/api/v1/namespaces/{NS}/secrets/{name}") < writes.index(restart)
               for name in ("flux-secrets", "edge-sync-credentials"))  # after the new Secrets


def test_public_scripts_restart_nothing(edge: EdgeCluster, flux_url: str) -> None:
    edge.install_flux(GA_FLUX)
    edge.add_namespace(NS)
    edge.add_deployment(NS, "edge-sync")
    for name in ("flux-secrets", "edge-sync-credentials"):
        edge.add_secret(NS, name, {"username": "kept", "password": "kept"})
    run = edge.run(script(credentials=False, flux_url=flux_url), "-y")
    succeeded(run)
    assert "Restarting" not in run.stdout
    assert restarted_at(edge) is None


def test_a_failed_restart_is_reported_and_the_rest_goes_on(edge: EdgeCluster,
                                                           flux_url: str) -> None:
    edge.install_flux(GA_FLUX)
    edge.add_namespace(NS)
    edge.add_deployment(NS, "edge-sync")
    edge.kube.call(lambda: edge.kube.emulator.failing.update({("PATCH", DEPLOYMENTS): 403}))
    run = edge.run(script(flux_url=flux_url), "-y")
    succeeded(run)
    assert "Warning: could not restart Edge Sync; restart it yourself:\n" \
           f"  kubectl -n {NS} rollout restart deployment/edge-sync" in run.stderr
    assert restarted_at(edge) is None and self_linked(edge)


# ---------------------------------------------------------------------------- asking first

def test_read_from_stdin_like_curl_pipe_sh(edge: EdgeCluster, flux_url: str) -> None:
    run = edge.run(script(flux_url=flux_url), "-y", from_stdin=True)
    succeeded(run)
    assert flux_installed(edge) and self_linked(edge)


def test_without_a_terminal_it_goes_ahead(edge: EdgeCluster, flux_url: str) -> None:
    run = edge.run(script(flux_url=flux_url))
    succeeded(run)
    assert "[y/N]" not in run.stderr
    assert flux_installed(edge) and self_linked(edge)


@pytest.mark.parametrize("answer", ["yess\n", ""])
def test_on_a_terminal_anything_but_yes_aborts(edge: EdgeCluster, answer: str) -> None:
    run = edge.run(script(), tty_input=answer or "\x04")  # ^D: end of input
    failed(run, "Aborted; nothing was changed.")
    assert "Install edge cluster shop-floor into context edge-admin@line? [y/N]" in run.stderr
    assert run.requests and run.changes == []


def test_on_a_terminal_yes_goes_ahead(edge: EdgeCluster, flux_url: str) -> None:
    run = edge.run(script(flux_url=flux_url), tty_input="Yes\n")
    succeeded(run)
    assert flux_installed(edge) and self_linked(edge)


def test_on_a_terminal_dash_y_does_not_ask(edge: EdgeCluster, flux_url: str) -> None:
    edge.install_flux(GA_FLUX)
    run = edge.run(script(flux_url=flux_url), "-y", tty_input="n\n")
    succeeded(run)
    assert "[y/N]" not in run.stderr
