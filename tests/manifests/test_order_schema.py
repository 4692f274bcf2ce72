"""The Edge deployment and fleet deployment schemas' dependsOn and driftDetection, and the
edge status report's drifted HelmRelease."""

from __future__ import annotations

from typing import Any

import pytest
from jsonschema import Draft202012Validator

from fplus import manifests

SCHEMAS = manifests.load("schemas")
U = "c1d2e3f4-a5b6-4c7d-8e9f-0a1b2c3d4e5f"
BODIES = {"edge-deployment": {"name": "h", "cluster": U, "chart": U},
          "fleet-deployment": {"name": "h", "chart": U, "selector": {}}}


@pytest.mark.parametrize("app", sorted(BODIES))
@pytest.mark.parametrize(("extra", "ok"), [
    ({"dependsOn": ["broker", "mes"]}, True),
    ({"dependsOn": []}, True),
    ({"dependsOn": ["broker", "broker"]}, False),
    ({"dependsOn": [""]}, False),
    ({"dependsOn": "broker"}, False),
    ({"driftDetection": "warn"}, True),
    ({"driftDetection": "enabled"}, True),
    ({"driftDetection": "disabled"}, True),
    ({"driftDetection": "on"}, False),
])
def test_order_and_drift_fields(app: str, extra: dict[str, Any], ok: bool) -> None:
    assert Draft202012Validator(SCHEMAS[app]).is_valid(BODIES[app] | extra) is ok


def test_a_drifted_helm_release_in_the_edge_report() -> None:
    flux = SCHEMAS["edge-cluster-status"]["properties"]["flux"]
    release = {"kind": "HelmRelease", "namespace": "e", "name": "app", "ready": "True"}
    report = {"objects": [release | {"drifted": True}], "total": 1, "ready": 1, "failed": 0,
              "progressing": 0}
    assert Draft202012Validator(flux).is_valid(report)
    report["objects"] = [release | {"drifted": "yes"}]
    assert not Draft202012Validator(flux).is_valid(report)
