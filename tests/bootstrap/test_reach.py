"""The script checks, before changing anything, that the edge reaches the Git server, the
Config Store and the registries it pulls from, and names each one it cannot reach."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from fplus import bootstrap, manifests
from fplus.templating import render
from tests.bootstrap.cluster import NAMESPACES, WRITES, EdgeCluster, FileServer
from tests.bootstrap.edge import bootstrap_context, extra_files
from tests.manifests.samples import CONTEXTS

SAMPLE = CONTEXTS["defaults"]
PING = {"/ping": Path(__file__)}  # any file: what answers does not matter, only that it does


@pytest.fixture
def store() -> Iterator[FileServer]:
    """A stand-in for the Config Store's /ping."""
    server = FileServer(PING)
    yield server
    server.close()


def _script(flux_url: str, git: str, store: str, registries: str = "") -> str:
    reach = {"git": git, "config_store": store, "registries": registries}
    entry = render(manifests.load("bootstrap-script"),
                   bootstrap_context(SAMPLE, flux_url, reach=reach))
    return bootstrap.build_script(entry, extra_files(SAMPLE))


def _stopped() -> str:
    """The /ping URL of a Git server that was running and is stopped now."""
    git = FileServer(PING)
    git.close()
    return git.url + "/ping"


def test_a_stopped_git_server_is_named_and_nothing_changes(
        edge: EdgeCluster, store: FileServer, flux_url: str) -> None:
    git = _stopped()
    run = edge.run(_script(flux_url, git, store.url + "/ping"), "-y")
    assert run.returncode == 1, (run.stdout, run.stderr)
    assert f"cannot reach:\n  the Git server at {git}\n" in run.stderr
    assert "Config Store" not in run.stderr.split("within")[0]  # it answered
    assert "Nothing was changed." in run.stderr
    assert [m for m, _ in run.requests if m in WRITES] == []
    assert SAMPLE["namespace"] not in edge.objects(NAMESPACES, None)


def test_every_unreachable_url_is_named(edge: EdgeCluster, flux_url: str) -> None:
    git, cs, registry = _stopped(), _stopped(), _stopped().replace("/ping", "/v2/")
    run = edge.run(_script(flux_url, git, cs, f"{flux_url} {registry}"), "-y")
    assert run.returncode == 1
    assert (f"cannot reach:\n  the Git server at {git}\n  the Config Store at {cs}\n"
            f"  a registry or download at {registry}\n") in run.stderr
    assert flux_url not in run.stderr  # served: reached
    assert [m for m, _ in run.requests if m in WRITES] == []


def test_reachable_services_let_it_go_on(edge: EdgeCluster, store: FileServer,
                                         flux_url: str) -> None:
    run = edge.run(_script(flux_url, store.url + "/ping", store.url + "/ping", flux_url), "-y")
    assert (run.returncode, run.stdout.splitlines()[-1:]) == (0, ["Done."]), run.stderr
    assert "The Git server, the Config Store and the registries answer." in run.stdout
    assert store.fetched.count("/ping") == 2


def test_r_skips_the_registries_only(edge: EdgeCluster, store: FileServer,
                                     flux_url: str) -> None:
    registry = _stopped().replace("/ping", "/v2/")
    ok = store.url + "/ping"
    run = edge.run(_script(flux_url, ok, ok, registry), "-y", "-r")
    assert (run.returncode, run.stdout.splitlines()[-1:]) == (0, ["Done."]), run.stderr
    assert registry not in run.stderr
    git = _stopped()
    refused = edge.run(_script(flux_url, git, ok, registry), "-y", "-r")
    assert refused.returncode == 1 and f"the Git server at {git}\n" in refused.stderr
    assert registry not in refused.stderr
