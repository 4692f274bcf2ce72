"""A fleet deployment's paced rollout in the console. In Chromium: from the fleet deployment's
page to its rollout's, the steps with their clusters by name, then Pause and Resume through the
buttons, each followed by the state the leader reaches (and only the buttons that state allows;
an aborted rollout may still be rolled back). Over HTTP with a session: an action the state
does not allow is refused with the service's reason and writes nothing, as is a forged form or
a user who may only read; a fleet deployment without a rollout has no rollout page and no link
to one."""

from __future__ import annotations

import re
import uuid
from pathlib import Path
from typing import Any

import pytest

from fplus.config_store import uuids
from harness.servers import ADMIN_PASSWORD, Api
from harness.stack import Stack, create_cluster, wait_for
from tests.cluster_manager.api.test_deployments import make_chart
from tests.cluster_manager.fleet.test_rollout_api import report
from tests.conftest import grant, make_user
from tests.console.conftest import console_session
from tests.console.test_browser import Page, _rows

FLEET = uuids.App.FleetDeployment
WAIT = 60.0


@pytest.fixture(scope="module")
def chart(stack: Stack) -> str:
    return make_chart(stack, "Rollout broker")


@pytest.fixture(scope="module")
def root(stack: Stack) -> Api:
    return Api(stack.manager.url, ("admin", ADMIN_PASSWORD))


def _clusters(stack: Stack, prefix: str) -> list[tuple[str, str]]:
    """Two new clusters as ``(uuid, name)``, sorted by uuid (the order of a rollout's steps)."""
    names = [f"{prefix}-{uuid.uuid4().hex[:8]}" for _ in range(2)]
    return sorted((create_cluster(stack.admin, n), n) for n in names)


def _paced(root: Api, chart: str, clusters: list[str]) -> str:
    """A fleet deployment rolled out one cluster at a time, begun by the leader: its first
    step stays Progressing (no edge reports)."""
    r = root.post("/v1/fleet-deployment", json={
        "name": f"paced-{uuid.uuid4().hex[:8]}", "chart": chart, "clusters": clusters,
        "rollout": {"steps": [{"clusters": 1}]}})
    assert r.status_code == 201, r.text
    fleet = str(r.json()["uuid"])
    _state_when(root, fleet, "Progressing")
    return fleet


def _state_when(root: Api, fleet: str, state: str) -> dict[str, Any]:
    def look() -> dict[str, Any] | None:
        view = root.get(f"/v1/rollout/{fleet}").json()
        return view if view.get("state") == state else None
    return wait_for(look, timeout=WAIT, what=f"the rollout {state}")


def _entry(stack: Stack, fleet: str) -> dict[str, Any]:
    r = stack.admin.get(f"/v2/app/{FLEET}/object/{fleet}")
    assert r.status_code == 200, r.text
    return dict(r.json())


def _csrf(page: str) -> str:
    found = re.search(r'name="csrf" value="([0-9a-f]{64})"', page)
    assert found, "no CSRF field on the page"
    return found.group(1)


def _buttons(page: Page) -> list[str]:
    return [b.get_attribute("id") for b in page.all("#rollout-actions button")]


def test_the_rollout_page_pauses_and_resumes_through_its_buttons(
        stack: Stack, root: Api, chart: str, browser: Any, tmp_path: Path) -> None:
    (first, first_name), (second, second_name) = _clusters(stack, "ui-ro")
    fleet = _paced(root, chart, [first, second])

    page = Page(browser, stack.manager.url, tmp_path / "screenshots")
    page.sign_in("admin", ADMIN_PASSWORD)
    page.open(f"/ui/fleet/{fleet}")
    page.click("#fleet-rollout")
    page.text_is("#rollout-state", "Progressing")
    assert _rows(page, "#rollout-steps") == [f"1 Progressing {first_name}",
                                             f"2 Pending {second_name}"]
    assert page.find("#rollout-step").text == "1 of 2"
    assert _buttons(page) == ["rollout-pause", "rollout-abort", "rollout-rollback"]
    page.shot("01-progressing")

    page.click("#rollout-pause")
    page.text_is(".notice", "Pause requested")
    page.text_is("#rollout-state", "Paused", timeout=WAIT)
    assert _state_when(root, fleet, "Paused")["step"] == 0
    wait_for(lambda: _buttons(page) == ["rollout-resume", "rollout-abort", "rollout-rollback"],
             what="the buttons a paused rollout allows")
    page.shot("02-paused")

    page.click("#rollout-resume")
    page.text_is(".notice", "Resume requested")
    page.text_is("#rollout-state", "Progressing", timeout=WAIT)
    view = _state_when(root, fleet, "Progressing")
    assert view["step"] == 0 and "pendingRequest" not in view
    assert _entry(stack, fleet)["rolloutRequest"]["action"] == "resume"
    page.shot("03-resumed")


def test_refused_actions_write_nothing(stack: Stack, root: Api, chart: str) -> None:
    (one, _), (two, _) = _clusters(stack, "ui-rr")
    fleet = _paced(root, chart, [one, two])
    before = _entry(stack, fleet)
    assert "rolloutRequest" not in before
    session, _ = console_session(stack)
    base = f"{stack.manager.url}/ui/rollout/{fleet}"
    page = session.get(base)
    assert page.status_code == 200 and 'id="rollout-resume"' not in page.text
    csrf = _csrf(page.text)

    # resume while Progressing: the service's reason, on the page, and nothing written
    r = session.post(f"{base}/resume", data={"csrf": csrf}, allow_redirects=False)
    assert r.status_code == 409, r.status_code
    found = re.search(r'id="rollout-action-error">([^<]*)<', r.text)
    assert found and "needs it Paused or Halted" in found.group(1), r.text[:2000]
    assert _entry(stack, fleet) == before
    # without the session's token, nothing either
    r = session.post(f"{base}/pause", data={"csrf": "0" * 64}, allow_redirects=False)
    assert r.status_code == 403 and _entry(stack, fleet) == before
    # an action that is no action is no route
    r = session.post(f"{base}/restart", data={"csrf": csrf}, allow_redirects=False)
    assert r.status_code in (404, 405) and _entry(stack, fleet) == before

    # a user who may read fleet deployments but not change them: the page, no buttons
    name, password = f"fleet-reader-{uuid.uuid4().hex[:8]}", "reader-" + "r" * 10
    uid, _ = make_user(stack.admin, name, password)
    grant(stack.admin, uid, uuids.ConfigDBPerm.ReadApp, FLEET)
    reader, _ = console_session(stack, name, password)
    page = reader.get(base)
    assert page.status_code == 200 and 'id="rollout-state"' in page.text
    assert 'id="rollout-actions"' not in page.text
    r = reader.post(f"{base}/pause", data={"csrf": _csrf(page.text)}, allow_redirects=False)
    assert r.status_code == 403 and _entry(stack, fleet) == before


def test_a_halted_rollout_names_the_failure_and_an_abort_says_what_it_left(
        stack: Stack, root: Api, chart: str) -> None:
    (one, one_name), (two, _) = _clusters(stack, "ui-rh")
    fleet = _paced(root, chart, [one, two])
    report(stack, one, fleet, failed="image pull failed")
    _state_when(root, fleet, "Halted")
    session, _ = console_session(stack)
    base = f"{stack.manager.url}/ui/rollout/{fleet}"
    page = session.get(base).text
    failed = page[page.index('id="rollout-failed"'):]
    assert f">{one_name}</a></td><td class=\"error\">image pull failed</td>" in failed, failed
    assert 'id="rollout-resume"' in page and 'id="rollout-abort"' in page
    assert 'id="rollout-pause"' not in page

    r = session.post(f"{base}/abort", data={"csrf": _csrf(page)}, allow_redirects=False)
    assert r.status_code == 303 and r.headers["Location"].endswith("?done=abort")
    _state_when(root, fleet, "Aborted")
    page = session.get(base).text
    note = page[page.index('id="rollout-message"'):]
    assert note.startswith('id="rollout-message">abort leaves every cluster as it is')
    actions = page[page.index('id="rollout-actions"'):page.index("</div>", page.index(
        'id="rollout-actions"'))]
    assert re.findall(r'<button type="submit" id="([\w-]+)"', actions) == ["rollout-rollback"]


def test_no_rollout_no_page_and_no_link(stack: Stack, root: Api, chart: str) -> None:
    (one, _), _ = _clusters(stack, "ui-nr")
    r = root.post("/v1/fleet-deployment", json={"name": f"plain-{uuid.uuid4().hex[:8]}",
                                                "chart": chart, "clusters": [one]})
    assert r.status_code == 201, r.text
    plain = r.json()["uuid"]
    session, _ = console_session(stack)
    detail = session.get(f"{stack.manager.url}/ui/fleet/{plain}")
    assert detail.status_code == 200 and 'id="fleet-rollout"' not in detail.text
    r = session.get(f"{stack.manager.url}/ui/rollout/{plain}")
    assert r.status_code == 404 and "has no rollout" in r.text
    r = session.get(f"{stack.manager.url}/ui/rollout/{uuid.uuid4()}")
    assert r.status_code == 404 and "neither a cluster rollout nor a fleet" in r.text
