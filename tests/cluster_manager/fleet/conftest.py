"""The fleet modules' stack and root Cluster Manager session, and the chart template their
fleet deployments name (an ordinary one: a system chart is refused), its chart imported into
the shared charts repo (a chart the repo lacks is refused)."""

from __future__ import annotations

import pytest

from fplus.config_store import uuids
from harness.central import import_chart
from harness.servers import Api
from harness.stack import Stack

CHART = "5b0f3f1e-6c1a-4a53-9d1e-0f1ee7c4a001"
"""An ordinary Helm chart template (chart ``historian``) made by :func:`fleet_chart`."""


def fleet_chart(stack: Stack) -> str:
    """:data:`CHART`, made on ``stack`` as an administrator makes a template, unless it is
    there already."""
    template = f"/v2/app/{uuids.App.HelmChartTemplate}/object/{CHART}"
    if stack.admin.get(template).status_code == 200:
        return CHART
    r = stack.admin.post("/v2/object", json={"class": uuids.Class.HelmChart, "uuid": CHART})
    assert r.status_code in (200, 201), r.text
    r = stack.admin.put(f"/v2/app/{uuids.App.Info}/object/{CHART}",
                        json={"name": "Fleet test chart"})
    assert r.status_code in (201, 204), r.text
    r = stack.admin.put(template, json={"chart": "historian", "values": {}})
    assert r.status_code in (201, 204), r.text
    import_chart(Api(stack.manager.url, stack.admin.auth), "historian", "1.0.0")
    return CHART


@pytest.fixture(scope="module")
def stack(module_stack: Stack) -> Stack:
    """A stack of each module's own: listings, gauges and rollouts count every fleet
    deployment, and the leader's loops act on everything they see."""
    fleet_chart(module_stack)
    return module_stack


@pytest.fixture(scope="module")
def root(stack: Stack) -> Api:
    """The Cluster Manager's API as the Config Store's root principal."""
    return Api(stack.manager.url, stack.admin.auth)
