"""The rollout page's ways out, on the real services over HTTP with a session: a rollout
halted by a failed change is rolled back with **Roll back** (the state RolledBack, the
reason, every cluster given its previous values); a cluster held by a closed maintenance
window is listed as waiting with its next window and started with its **Start now**, which
the list page counts; a Start now for a cluster the rollout does not target writes
nothing."""

from __future__ import annotations

import html
import re
import uuid
from typing import Any

import pytest

from fplus.cluster_manager.rollouts.fleet_entry import member_uuid
from fplus.config_store import uuids
from harness.servers import ADMIN_PASSWORD, Api
from harness.stack import Stack, create_cluster, wait_for
from tests.cluster_manager.api.test_deployments import make_chart
from tests.cluster_manager.fleet.test_rollout_api import report
from tests.console.conftest import console_session
from tests.console.test_rollout import WAIT, _csrf, _entry, _state_when

DEPLOYMENT = uuids.App.EdgeDeployment
MERGE = {"Content-Type": "application/merge-patch+json"}


@pytest.fixture(scope="module")
def root(stack: Stack) -> Api:
    return Api(stack.manager.url, ("admin", ADMIN_PASSWORD))


@pytest.fixture(scope="module")
def chart(stack: Stack) -> str:
    return make_chart(stack, f"Recovery broker {uuid.uuid4().hex[:6]}")


def _value(stack: Stack, fleet: str, cluster: str) -> object:
    """The ``v`` of the fleet deployment's Edge deployment on ``cluster`` (None: none)."""
    r = stack.admin.get(f"/v2/app/{DEPLOYMENT}/object/{member_uuid(fleet, cluster)}")
    return (r.json().get("values") or {}).get("v") if r.status_code == 200 else None


def _fleet(root: Api, chart: str, site: str, rollout: dict[str, Any]) -> str:
    r = root.post("/v1/fleet-deployment", json={
        "name": f"rec-{site}", "chart": chart, "values": {"v": 1},
        "selector": {"matchLabels": {"rec-site": site}}, "rollout": rollout})
    assert r.status_code == 201, r.text
    return str(r.json()["uuid"])


def test_roll_back_returns_the_changed_clusters_and_shows_rolled_back(
        stack: Stack, root: Api, chart: str) -> None:
    site = f"rb{uuid.uuid4().hex[:8]}"
    one, two = sorted(create_cluster(stack.admin, f"{site}-{n}", labels={"rec-site": site})
                      for n in range(2))
    fleet = _fleet(root, chart, site, {"steps": [{"clusters": 1}]})
    wait_for(lambda: _value(stack, fleet, one) == 1, timeout=WAIT, what="step 1")
    report(stack, one, fleet)
    wait_for(lambda: _value(stack, fleet, two) == 1, timeout=WAIT, what="step 2")
    report(stack, two, fleet)
    _state_when(root, fleet, "Complete")
    r = root.patch(f"/v1/fleet-deployment/{fleet}", json={"values": {"v": 2}}, headers=MERGE)
    assert r.status_code == 200, r.text
    wait_for(lambda: _value(stack, fleet, one) == 2, timeout=WAIT, what="the change")
    report(stack, one, fleet, failed="the new version crashes")
    _state_when(root, fleet, "Halted")

    session, _ = console_session(stack)
    base = f"{stack.manager.url}/ui/rollout/{fleet}"
    page = session.get(base).text
    assert 'id="rollout-rollback"' in page and 'id="rollback-help"' in page
    r = session.post(f"{base}/rollback", data={"csrf": _csrf(page)}, allow_redirects=False)
    assert r.status_code == 303 and r.headers["Location"].endswith("?done=rollback"), r.text
    assert _entry(stack, fleet)["rolloutRequest"]["action"] == "rollback"
    view = _state_when(root, fleet, "RolledBack")
    wait_for(lambda: _value(stack, fleet, one) == 1, timeout=WAIT, what="v1 back")
    assert _value(stack, fleet, two) == 1

    page = session.get(base).text
    assert 'id="rollout-state">RolledBack<' in page
    reason = re.search(r'id="rollout-reason">([^<]*)<', page)
    assert reason and html.unescape(reason[1]) == view["reason"], page[:3000]
    assert 'id="rollout-rolled-back"' in page and 'id="rollout-rollback"' not in page
    listed = session.get(f"{stack.manager.url}/ui/rollout").text
    row = listed[listed.index(f'data-uuid="{fleet}"'):]
    assert "state-rolledback" in row[:row.index("</tr>")]


def test_start_now_changes_a_cluster_waiting_for_its_window(
        stack: Stack, root: Api, chart: str) -> None:
    site = f"sn{uuid.uuid4().hex[:8]}"
    cluster = create_cluster(stack.admin, f"{site}-0", labels={"rec-site": site})
    window = f"/v1/maintenance-window/new-year-{site}"
    r = root.put(window, json={"selector": {"matchLabels": {"rec-site": site}},
                               "schedule": "0 0 1 1 *", "duration": 3600, "timeZone": "UTC"})
    assert r.status_code in (200, 201), r.text
    try:
        fleet = _fleet(root, chart, site, {})
        wait_for(lambda: root.get(f"/v1/rollout/{fleet}").json().get("waiting"),
                 timeout=WAIT, what="the cluster waiting")
        session, _ = console_session(stack)
        base = f"{stack.manager.url}/ui/rollout/{fleet}"
        page = session.get(base).text
        waiting = page[page.index('id="rollout-waiting"'):]
        waiting = waiting[:waiting.index("</table>")]
        assert f"{site}-0</a>" in waiting and "-01-01T00:00:00Z</time>" in waiting, waiting
        assert f'id="start-now-{cluster}"' in waiting and _value(stack, fleet, cluster) is None
        listed = session.get(f"{stack.manager.url}/ui/rollout").text
        row = listed[listed.index(f'data-uuid="{fleet}"'):]
        assert re.findall(r"<td>(\d+)</td>", row[:row.index("</tr>")])[-1] == "1"  # waiting

        before = _entry(stack, fleet)
        r = session.post(f"{base}/start-now", data={"csrf": _csrf(page),
                                                    "cluster": str(uuid.uuid4())},
                         allow_redirects=False)
        assert r.status_code == 422 and "does not target" in r.text
        assert _entry(stack, fleet) == before
        r = session.post(f"{base}/start-now", data={"csrf": _csrf(page), "cluster": cluster},
                         allow_redirects=False)
        assert r.status_code == 303 and r.headers["Location"].endswith("?done=start-now")
        wait_for(lambda: _value(stack, fleet, cluster) == 1, timeout=WAIT,
                 what="the cluster started now")
        rows = root.get("/v1/audit", params={"limit": "50"}).json()["entries"]
        assert any(r["action"] == "rollout.start-now" and r["target"]["uuid"] == fleet
                   for r in rows)
    finally:
        assert root.delete(window).status_code in (200, 204)
