"""The whole default script run with sh against a recording kubectl (tests/bootstrap/edge.py).

Every run also checks that the script's temp dir is gone afterwards, failed or not.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.bootstrap.edge import (
    FLUX_APIS,
    FLUX_INSTALL,
    FLUX_URL,
    FakeEdge,
    Run,
    script,
    secrets_for,
    tools_without_kubectl,
)
from tests.manifests.crds import CustomResource
from tests.manifests.meta import meta_errors
from tests.manifests.samples import CONTEXTS

kubernetes_validate = pytest.importorskip("kubernetes_validate")

NS = CONTEXTS["defaults"]["namespace"]
PREFLIGHT = [["get", "nodes"], ["config", "current-context"],
             ["-n", "flux-system", "get", "deployment", "helm-controller"]]
SERVED = [["get", "crd", crd, "-o", "jsonpath={.spec.versions[?(@.served==true)].name}"]
          for crd in FLUX_APIS]
CREDENTIALS = ["apply", "--server-side", "--force-conflicts", "--field-manager=fplus-bootstrap",
               "-f", "credentials.yaml"]
FLUX_WAITS = [
    ["wait", "--for=condition=Established", "--timeout=300s", *(f"crd/{c}" for c in FLUX_APIS)],
    ["-n", "flux-system", "wait", "--for=condition=Available", "--timeout=300s",
     "deployment/source-controller", "deployment/kustomize-controller",
     "deployment/helm-controller"]]
GA_FLUX = {crd: ["v1beta2", version] if version == "v1" else ["v2beta2", version]
           for crd, version in FLUX_APIS.items()}


def self_link_calls(namespace: str) -> list[list[str]]:
    return [["apply", "-f", "self-link.yaml"],
            ["-n", namespace, "wait", "--for=condition=Ready", "--timeout=300s",
             "kustomization/self-link"]]


def first_run_calls(namespace: str, flux_source: str = FLUX_URL) -> list[list[str]]:
    """A fresh cluster: namespace created, credentials written, Flux installed."""
    return [*PREFLIGHT, ["get", "namespace", namespace], ["create", "namespace", namespace],
            CREDENTIALS, ["apply", "-f", flux_source], *FLUX_WAITS, *self_link_calls(namespace)]


def later_run_calls(namespace: str) -> list[list[str]]:
    """Flux (compatible) and the namespace exist: credentials replaced, self-link re-applied."""
    return [*PREFLIGHT, *SERVED, ["get", "namespace", namespace], CREDENTIALS,
            *self_link_calls(namespace)]


def changes(run: Run) -> list[list[str]]:
    """The calls that change the cluster."""
    return [argv for argv in run.argvs if {"apply", "create"} & set(argv)]


def succeeded(run: Run) -> None:
    assert (run.returncode, run.stdout.splitlines()[-1:]) == (0, ["Done."]), run.stderr


def failed(run: Run, message: str, code: int = 1) -> None:
    assert run.returncode == code, (run.stdout, run.stderr)
    assert message in run.stderr
    assert "Done." not in run.stdout


# ---------------------------------------------------------------------------- twice, from scratch

@pytest.fixture(scope="module", params=["defaults", "shared-namespace"])
def two_runs(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
             manifest_cache: Path) -> Iterator[tuple[str, Run, Run, FakeEdge]]:
    """The same script run twice with -y on one fresh cluster."""
    edge = FakeEdge(tmp_path_factory.mktemp("edge"), manifest_cache)
    text = script(request.param)
    yield request.param, edge.run(text, "-y"), edge.run(text, "-y"), edge


def test_first_run_creates_the_namespace_and_installs_flux(two_runs: Any) -> None:
    sample, first, _, _ = two_runs
    succeeded(first)
    assert first.argvs == first_run_calls(CONTEXTS[sample]["namespace"])
    assert f"Installing Flux 2.7.5 from {FLUX_URL}" in first.stdout


def test_files_are_written_to_a_temp_dir_that_is_gone_afterwards(two_runs: Any) -> None:
    _, first, second, edge = two_runs
    for run in (first, second):
        [workdir] = {call["cwd"] for call in run.calls}
        assert Path(workdir).parent == edge.scratch  # mktemp -d, honouring TMPDIR
        assert not Path(workdir).exists()
    assert first.calls[0]["cwd"] != second.calls[0]["cwd"]


def test_second_run_skips_namespace_and_flux(two_runs: Any) -> None:
    sample, _, second, _ = two_runs
    succeeded(second)
    assert second.argvs == later_run_calls(CONTEXTS[sample]["namespace"])
    assert "Flux is already installed" in second.stdout


def test_the_cluster_ends_with_everything(two_runs: Any) -> None:
    sample_name, _, _, edge = two_runs
    sample = CONTEXTS[sample_name]
    ns = sample["namespace"]
    for kind, namespace, name in [("Namespace", "", ns), ("GitRepository", ns, "self-link"),
                                  ("Kustomization", ns, "self-link"),
                                  ("Deployment", "flux-system", "helm-controller")]:
        assert edge.has(kind, namespace, name), (kind, name)
    assert edge.secrets(ns) == {name: {"username": user, "password": password}
                                for name, (user, password) in secrets_for(sample).items()}


def test_applied_manifests_validate(two_runs: Any,
                                    crds: dict[tuple[str, str], CustomResource]) -> None:
    sample_name, first, second, _ = two_runs
    sample = CONTEXTS[sample_name]
    for run in (first, second):
        secrets = run.applied("credentials.yaml")
        assert [s["metadata"]["name"] for s in secrets] == list(secrets_for(sample))
        for doc in secrets:
            kubernetes_validate.validate(doc, kubernetes_validate.latest_version(), strict=True)
            assert meta_errors(doc, namespaced=True) == []
            user, password = secrets_for(sample)[doc["metadata"]["name"]]
            assert doc["stringData"] == {"username": user, "password": password}
        self_link = run.applied("self-link.yaml")
        assert [(d["kind"], d["metadata"]["name"]) for d in self_link] == [
            ("GitRepository", "self-link"), ("Kustomization", "self-link")]
        for doc in self_link:
            assert crds[doc["apiVersion"], doc["kind"]].errors(doc) == []
            assert meta_errors(doc, namespaced=True) == []
            assert doc["metadata"]["namespace"] == sample["namespace"]
        repo = self_link[0]
        assert repo["spec"]["secretRef"] == {"name": sample["flux"]["secret"]}
        assert repo["spec"]["url"].endswith(f"/uuid/{sample['uuid']}")


# ---------------------------------------------------------------------------- variants

def test_air_gapped_applies_the_embedded_flux(edge: FakeEdge) -> None:
    edge.serve_urls({})  # no network: the URL would fail
    run = edge.run(script(air_gapped=True), "-y")
    succeeded(run)
    assert run.argvs == first_run_calls(NS, "flux-system.yaml")
    [flux] = [c["files"]["flux-system.yaml"] for c in run.calls if "flux-system.yaml" in c["files"]]
    assert flux == FLUX_INSTALL.read_text(encoding="utf-8")
    assert not [argv for argv in run.argvs if any("://" in arg for arg in argv)]
    assert "from the manifests in this script" in run.stdout


def test_flux_unreachable_stops_before_the_self_link(edge: FakeEdge) -> None:
    edge.serve_urls({})
    run = edge.run(script(), "-y")
    failed(run, "Installing Flux failed.")
    assert run.argvs[-1] == ["apply", "-f", FLUX_URL]


def test_public_script_needs_the_secrets(edge: FakeEdge) -> None:
    run = edge.run(script(credentials=False), "-y")
    failed(run, "Secret(s) flux-secrets edge-sync-credentials missing in namespace fplus-edge")
    assert "carries no credentials" in run.stderr
    assert changes(run) == []


def test_public_script_names_only_the_missing_secret(edge: FakeEdge) -> None:
    edge.add("Namespace", "", NS)
    edge.add_secret(NS, "flux-secrets", {"username": "u", "password": "p"})
    run = edge.run(script(credentials=False), "-y")
    failed(run, "Secret(s) edge-sync-credentials missing")
    assert changes(run) == []


def test_public_script_uses_existing_secrets(edge: FakeEdge) -> None:
    edge.add("Namespace", "", NS)
    for name in ("flux-secrets", "edge-sync-credentials"):
        edge.add_secret(NS, name, {"username": "kept", "password": "kept"})
    run = edge.run(script(credentials=False), "-y")
    succeeded(run)
    assert run.argvs == [*PREFLIGHT, ["-n", NS, "get", "secret", "flux-secrets"],
                         ["-n", NS, "get", "secret", "edge-sync-credentials"],
                         ["get", "namespace", NS], ["apply", "-f", FLUX_URL], *FLUX_WAITS,
                         *self_link_calls(NS)]
    assert edge.secrets(NS)["flux-secrets"] == {"username": "kept", "password": "kept"}


def test_compatible_flux_is_kept(edge: FakeEdge) -> None:
    edge.install_flux(GA_FLUX)
    run = edge.run(script(), "-y")
    succeeded(run)
    assert run.argvs == [*PREFLIGHT, *SERVED, ["get", "namespace", NS],
                         ["create", "namespace", NS], CREDENTIALS, *self_link_calls(NS)]


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
def test_incompatible_flux_aborts_before_any_change(edge: FakeEdge,
                                                    served: dict[str, list[str]]) -> None:
    edge.install_flux(served)
    run = edge.run(script(), "-y")
    failed(run, "Flux is installed but too old for this cluster's manifests.\n"
                "Upgrade Flux to 2.7.5")
    assert changes(run) == []
    assert all(argv[:1] == ["get"] or argv[2:3] == ["get"] or argv[0] == "config"
               for argv in run.argvs)


def test_old_crds_without_flux_running_are_upgraded(edge: FakeEdge) -> None:
    for crd in FLUX_APIS:
        edge.add("CustomResourceDefinition", "", crd, b"v1beta2\n")
    run = edge.run(script(), "-y")
    succeeded(run)
    assert run.argvs == first_run_calls(NS)


def test_unreachable_cluster(edge: FakeEdge) -> None:
    edge.unreachable()
    run = edge.run(script(), "-y")
    failed(run, "Cannot reach the cluster. Maybe you need to set KUBECONFIG?")
    assert run.argvs == [["get", "nodes"]]


def test_self_link_not_ready_in_time(edge: FakeEdge) -> None:
    edge.fail_wait("kustomization/self-link")
    run = edge.run(script(), "-y")
    failed(run, "The cluster's repo was not applied within 300s.")
    for hint in (f"kubectl -n {NS} describe kustomization self-link",
                 f"kubectl -n {NS} describe gitrepository self-link"):
        assert hint in run.stderr
    assert run.argvs == first_run_calls(NS)


def test_no_kubectl(edge: FakeEdge) -> None:
    run = edge.run(script(), "-y", path=tools_without_kubectl(edge.root))
    failed(run, "kubectl not found on PATH")
    assert run.calls == []


@pytest.mark.parametrize("args", [["-x"], ["-y", "-q"], ["extra"], ["-y", "--", "extra"]])
def test_bad_arguments(edge: FakeEdge, args: list[str]) -> None:
    run = edge.run(script(), *args)
    failed(run, "Usage: sh bootstrap.sh [-y] [-h]", code=2)
    assert run.calls == []


def test_help(edge: FakeEdge) -> None:
    run = edge.run(script(), "-h")
    assert run.returncode == 0
    assert run.stdout.startswith("Usage: sh bootstrap.sh [-y] [-h]\n")
    assert "Installs edge cluster shop-floor" in run.stdout
    assert run.calls == []


# ---------------------------------------------------------------------------- asking first

def test_read_from_stdin_like_curl_pipe_sh(edge: FakeEdge) -> None:
    run = edge.run(script(), "-y", from_stdin=True)
    succeeded(run)
    assert run.argvs == first_run_calls(NS)


def test_without_a_terminal_it_goes_ahead(edge: FakeEdge) -> None:
    run = edge.run(script())
    succeeded(run)
    assert run.argvs == first_run_calls(NS)
    assert "[y/N]" not in run.stderr


@pytest.mark.parametrize("answer", ["yess\n", ""])
def test_on_a_terminal_anything_but_yes_aborts(edge: FakeEdge, answer: str) -> None:
    run = edge.run(script(), tty_input=answer or "\x04")  # ^D: end of input
    failed(run, "Aborted; nothing was changed.")
    assert "Install edge cluster shop-floor into context edge-admin@line? [y/N]" in run.stderr
    assert changes(run) == []


def test_on_a_terminal_yes_goes_ahead(edge: FakeEdge) -> None:
    run = edge.run(script(), tty_input="Yes\n")
    succeeded(run)
    assert run.argvs == first_run_calls(NS)


def test_on_a_terminal_dash_y_does_not_ask(edge: FakeEdge) -> None:
    run = edge.run(script(), "-y", tty_input="n\n")
    succeeded(run)
    assert "[y/N]" not in run.stderr
