"""Imports over the API: ``POST /v1/chart`` (a chart archive) and ``POST /v1/flux-version``
(a `flux install --export`) under the Imports permission, checked as ``cluster-manager
import-chart``/``import-flux`` check them (one owner), committed into the central repos;
``GET /v1/flux-version`` and ``GET /v1/chart?imported=true`` list what is there, and the
console's create form offers both. A refusal (no permission, a malformed archive, a body over
the limit) commits nothing."""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from fplus.cluster_manager.formats import flux_export, helm_chart
from fplus.config_store import uuids
from harness.browser import headless_chromium
from harness.central import chart_archive
from harness.gitcli import bare
from harness.servers import ADMIN_PASSWORD, Api
from harness.stack import Stack, create_cluster, status, wait_for
from tests.console.conftest import cluster_names, console_session
from tests.console.test_browser import Page
from tests.shared_files import FLUX_INSTALL, need

CHARTS = uuids.Shared.HelmChartsRepo
FLUX = uuids.Shared.FluxSystemRepo
IMPORTS = uuids.EdgePerm.Imports
GZIP = {"Content-Type": "application/gzip"}
YAML = {"Content-Type": "application/yaml"}


def with_central_repos(stack: Stack) -> Stack:
    """``stack`` once the central charts and Flux repos have their first commit."""
    for repo in (CHARTS, FLUX):
        wait_for(lambda r=repo: bare(stack.repos / f"{r}.git", "rev-parse", "--verify",
                                     "-q", "main", check=False), what=f"{repo}'s first commit")
    return stack


@pytest.fixture(scope="module")
def stack(module_stack: Stack) -> Stack:
    """A stack of this module's own: a Flux import changes what every cluster may name."""
    return with_central_repos(module_stack)


def head(stack: Stack, repo: str) -> str:
    return bare(stack.repos / f"{repo}.git", "rev-parse", "main").strip()


def test_a_chart_imported_with_the_permission_is_committed_and_listed(
        stack: Stack, user_with: Callable[..., Api]) -> None:
    importer = user_with((IMPORTS, uuids.NULL))
    r = importer.post("/v1/chart", data=chart_archive("historian", "1.2.3"), headers=GZIP)
    assert r.status_code == 201, r.text
    done = r.json()
    assert done["chart"] == "historian" and done["version"] == "1.2.3" and done["files"] == 2
    assert done["commit"] == head(stack, CHARTS) and "template" not in done
    chart_yaml = bare(stack.repos / f"{CHARTS}.git", "show", "main:historian/Chart.yaml")
    assert "version: 1.2.3" in chart_yaml
    listed = importer.get("/v1/chart", params={"imported": "true"}).json()
    assert {"name": "historian", "version": "1.2.3"} in listed["imported"]
    assert "imported" not in importer.get("/v1/chart").json()
    assert importer.get("/v1/chart", params={"imported": "yes"}).status_code == 400
    # the import is in the audit log, under the request's id
    rid = r.headers["X-Request-Id"]
    rows = Api(stack.manager.url, stack.admin.auth).get("/v1/audit", params={"limit": 1000})
    [row] = [e for e in rows.json()["entries"] if e["requestId"] == rid]
    assert (row["action"], row["target"]["kind"], row["outcome"]) == ("chart.import", "chart",
                                                                       "ok")
    # the same archive again commits nothing
    again = importer.post("/v1/chart", data=chart_archive("historian", "1.2.3"), headers=GZIP)
    assert again.status_code == 200 and again.json()["changed"] is False
    assert head(stack, CHARTS) == done["commit"]

    # with ?template= a Helm chart template of that name is made, as the caller (who must
    # also be allowed to make one in the Config Store), and GET /v1/chart lists it
    maker = user_with((IMPORTS, uuids.NULL),
                      (uuids.ConfigDBPerm.CreateObj, uuids.Class.HelmChart),
                      (uuids.ConfigDBPerm.WriteApp, uuids.App.HelmChartTemplate),
                      (uuids.ConfigDBPerm.WriteApp, uuids.App.Info))
    r = maker.post("/v1/chart", params={"template": "Historian"},
                   data=chart_archive("historian", "1.2.4"), headers=GZIP)
    assert r.status_code == 201, r.text
    template = r.json()["template"]
    charts = {c["uuid"]: c for c in maker.get("/v1/chart").json()["charts"]}
    assert charts[template] == {"uuid": template, "name": "Historian", "chart": "historian",
                                "system": False}
    assert "version: 1.2.4" in bare(stack.repos / f"{CHARTS}.git", "show",
                                    "main:historian/Chart.yaml")
    # a second template of that name is refused before anything is committed
    before = head(stack, CHARTS)
    r = maker.post("/v1/chart", params={"template": "Historian"},
                   data=chart_archive("historian", "1.2.5"), headers=GZIP)
    assert r.status_code == 409 and "Historian" in r.json()["error"]
    assert head(stack, CHARTS) == before


def test_without_the_permission_nothing_is_committed(
        stack: Stack, user_with: Callable[..., Api]) -> None:
    before = head(stack, CHARTS)
    flux_before = head(stack, FLUX)
    for session in (user_with(), user_with((uuids.EdgePerm.Clusters, uuids.NULL))):
        r = session.post("/v1/chart", data=chart_archive("forbidden"), headers=GZIP)
        assert r.status_code == 403, r.text
        r = session.post("/v1/flux-version", data=b"kind: x\n", headers=YAML)
        assert r.status_code == 403, r.text
    assert Api(stack.manager.url).post("/v1/chart", data=chart_archive("anon"),
                                       headers=GZIP).status_code == 401
    assert head(stack, CHARTS) == before and head(stack, FLUX) == flux_before
    # the Imports permission alone does not make chart templates: the Config Store decides
    importer = user_with((IMPORTS, uuids.NULL))
    r = importer.post("/v1/chart", params={"template": "Nope"}, data=chart_archive("nope"),
                      headers=GZIP)
    assert r.status_code == 403 and "Config Store" in r.json()["error"]
    assert head(stack, CHARTS) == before
    assert "Nope" not in {c["name"] for c in importer.get("/v1/chart").json()["charts"]}


@pytest.mark.parametrize(("body", "words"), [
    (b"not an archive at all", "neither a chart directory nor a chart archive"),
    (chart_archive("bad_name"), "Chart.yaml name must be lower-case"),
    (chart_archive("gitty", extra={".gitmodules": b"x"}), "Git's own files"),
])
def test_a_malformed_archive_is_refused_naming_what_is_wrong(
        stack: Stack, user_with: Callable[..., Api], body: bytes, words: str) -> None:
    before = head(stack, CHARTS)
    r = user_with((IMPORTS, uuids.NULL)).post("/v1/chart", data=body, headers=GZIP)
    assert r.status_code == 422, r.text
    assert words in r.json()["error"] and "nothing was imported" in r.json()["error"]
    assert head(stack, CHARTS) == before


def test_body_type_and_size_limits(stack: Stack, user_with: Callable[..., Api]) -> None:
    importer = user_with((IMPORTS, uuids.NULL))
    before = head(stack, CHARTS)
    r = importer.post("/v1/chart", json={"chart": "x"})
    assert r.status_code == 415 and "chart archive" in r.json()["error"]
    r = importer.post("/v1/chart", params={"nme": "x"}, data=chart_archive("x"), headers=GZIP)
    assert r.status_code == 400 and "nme" in r.json()["error"]
    r = importer.post("/v1/chart", data=b"\0" * (helm_chart.MAX_BYTES + 1), headers=GZIP)
    assert r.status_code == 413, r.text
    assert head(stack, CHARTS) == before
    flux_before = head(stack, FLUX)
    r = importer.post("/v1/flux-version", data=b"#" * (flux_export.MAX_BYTES + 1), headers=YAML)
    assert r.status_code == 413, r.text
    assert head(stack, FLUX) == flux_before
    # over the app's 1 MiB body limit but under the chart's own: taken
    big = chart_archive("big-chart", extra={"files/blob.bin": os.urandom(2 * 1024 * 1024)})
    r = importer.post("/v1/chart", data=big, headers=GZIP)
    assert r.status_code == 201, r.text
    assert head(stack, CHARTS) == r.json()["commit"] != before


def test_a_flux_version_imported_is_listed_and_a_cluster_commissions_with_it(
        stack: Stack, user_with: Callable[..., Api]) -> None:
    export = need(FLUX_INSTALL).read_bytes()
    importer = user_with((IMPORTS, uuids.NULL))
    reader = user_with()
    assert reader.get("/v1/flux-version").json() == {"versions": []}
    before = head(stack, FLUX)
    r = importer.post("/v1/flux-version", data=b"apiVersion: v1\nkind: ConfigMap\n",
                      headers=YAML)
    assert r.status_code == 422 and "is not a `flux install --export`" in r.json()["error"]
    assert head(stack, FLUX) == before

    waiting = create_cluster(stack.admin, f"flux-api-{uuid.uuid4().hex[:6]}",
                             fluxVersion="v2.7.5")
    wait_for(lambda: (status(stack.admin, waiting) or {}).get("phase") == "Failed",
             what="Failed before the import")
    r = importer.post("/v1/flux-version", data=export, headers=YAML)
    assert r.status_code == 201, r.text
    assert r.json() == {"version": "v2.7.5", "commit": head(stack, FLUX), "changed": True,
                        "retried": 1}
    assert reader.get("/v1/flux-version").json() == {"versions": ["v2.7.5"]}
    assert bare(stack.repos / f"{FLUX}.git", "show",
                "main:v2.7.5/gotk-components.yaml").encode() == export

    # the cluster that waited, and a new one, commission with it
    fresh = create_cluster(stack.admin, f"flux-api-{uuid.uuid4().hex[:6]}",
                           fluxVersion="v2.7.5")
    for cluster in (waiting, fresh):
        wait_for(lambda c=cluster: (status(stack.admin, c) or {}).get("ready"),
                 what="ready with the imported Flux")
        flux_file = bare(stack.repos / f"{cluster}.git", "show",
                         "main:edo/cluster/flux-system.yaml")
        assert "path: ./v2.7.5" in flux_file and f"/uuid/{FLUX}" in flux_file



def test_the_console_create_form_offers_the_charts_and_flux_versions(
        stack: Stack, user_with: Callable[..., Api], tmp_path: Path) -> None:
    r = user_with((IMPORTS, uuids.NULL)).post("/v1/flux-version",
                                              data=need(FLUX_INSTALL).read_bytes(), headers=YAML)
    assert r.status_code in (200, 201), r.text
    session, page = console_session(stack)
    csrf = re.search(r'name="csrf" value="([0-9a-f]{64})"', page)
    assert csrf
    name = f"ui-flux-{uuid.uuid4().hex[:6]}"
    r = session.post(f"{stack.manager.url}/ui/new", allow_redirects=False, data={
        "csrf": csrf[1], "name": name, "namespace": "fplus-edge", "flux_version": "2.7"})
    assert r.status_code == 422 and "fluxVersion must be a Flux version" in r.text
    assert '<option value="v2.7.5">' in r.text  # offered again with the refusal
    assert name not in cluster_names(stack)

    with headless_chromium(tmp_path) as driver:
        browser = Page(driver, stack.manager.url, tmp_path / "screenshots")
        browser.sign_in("admin", ADMIN_PASSWORD)
        browser.open("/ui/new")
        browser.find("#flux_version")
        assert [o.get_attribute("value") for o in browser.all("#flux-versions option")] == \
            ["v2.7.5"]
        charts = [o.get_attribute("value") for o in browser.all("#chart-options option")]
        listed = Api(stack.manager.url, ("admin", ADMIN_PASSWORD)).get("/v1/chart").json()
        names = {c["uuid"]: c.get("name") for c in listed["charts"]}
        # offered by name (a template without a name by its uuid)
        assert (names[uuids.Shared.EdgeClusterChart] or uuids.Shared.EdgeClusterChart) in charts
        browser.fill({"name": name, "flux_version": "v2.7.5"})
        browser.shot("new-cluster-with-flux")
        browser.click("button[type=submit].primary")
        browser.click("#confirm-change")  # the form previews the cluster first
        browser.text_is(".notice", "Cluster requested")
        cluster = driver.current_url.rstrip("/").split("/")[-1].split("?")[0]
    entry = stack.admin.get(f"/v2/app/{uuids.App.EdgeClusterConfiguration}/object/"
                            f"{cluster}").json()
    assert entry["name"] == name and entry["fluxVersion"] == "v2.7.5"
    wait_for(lambda: (status(stack.admin, cluster) or {}).get("ready"), what="ready")
