"""The typed setup status: parsing what is stored, and the patches its writer records."""

from __future__ import annotations

from typing import Any

import pytest

from fplus.cluster_manager.setup_status import Account, Condition, SetupStatus
from fplus.cluster_manager.vocabulary import FLUX, FLUX_VERSION, SYNC

OLD = "2020-01-01T00:00:00Z"


@pytest.mark.parametrize("entry", [None, [], "x", 3, {}])
def test_anything_but_an_object_is_an_empty_status(entry: Any) -> None:
    status = SetupStatus.parse(entry)
    assert not status.exists and status.phase == "Pending" and not status.ready
    assert status.name is None and status.account(FLUX) == Account()


def test_fields_are_read_with_their_types() -> None:
    status = SetupStatus.parse({
        "spec": {"name": "a", "namespace": "b"}, "phase": "Ready", "ready": True,
        "flux": {"uuid": "u", "done": True}, "sync": {"uuid": "v"}, "commit": "c",
        "self_link": "---\n", "observedEtag": "e", "fluxVersion": FLUX_VERSION,
        "conditions": [{"type": "Ready", "status": "True"}, "junk"]})
    assert (status.name, status.namespace, status.commit) == ("a", "b", "c")
    assert status.account(FLUX) == Account("u", True) and status.account(SYNC) == Account("v")
    assert status.is_current("e") and not status.is_current("other")
    assert status.bootstrappable
    assert status.conditions == (Condition("Ready", "True"),)


@pytest.mark.parametrize(("entry", "ready"), [
    ({"ready": "true"}, False), ({"ready": 1}, False), ({"ready": True}, True)])
def test_only_true_is_ready(entry: dict, ready: bool) -> None:
    assert SetupStatus.parse(entry).ready is ready


def test_an_older_flux_version_is_not_current() -> None:
    status = SetupStatus.parse({"ready": True, "observedEtag": "e", "fluxVersion": "2.0.0"})
    assert not status.is_current("e")


def test_a_refused_entry_is_kept_apart_from_the_accepted_spec() -> None:
    status = SetupStatus.parse({"spec": {"name": "a"}, "phase": "Ready"})
    patch = status.failed({"name": "b"}, "no", "e2")
    assert "spec" not in patch and patch["refused"] == {"spec": {"name": "b"},
                                                         "observedEtag": "e2"}
    assert status.provisioning({"name": "a"})["refused"] is None


def test_a_condition_keeps_its_transition_time_while_its_status_stays() -> None:
    status = SetupStatus.parse({"conditions": [
        {"type": "Ready", "status": "True", "reason": "X", "lastTransitionTime": OLD},
        {"type": "Other", "status": "False", "lastTransitionTime": OLD}]})
    same = status.with_condition(Condition("Ready", "True", "Y", "again"))
    assert {c["type"]: c["lastTransitionTime"] for c in same} == {"Ready": OLD, "Other": OLD}
    assert next(c for c in same if c["type"] == "Ready")["reason"] == "Y"
    flipped = status.with_condition(Condition("Ready", "False", "Z"))
    assert next(c for c in flipped if c["type"] == "Ready")["lastTransitionTime"] != OLD


def test_failed_and_commissioned_patches() -> None:
    status = SetupStatus.parse({})
    failed = status.failed({"name": 1}, "bad", "e1")
    assert SetupStatus.parse(failed).refused == {"spec": {"name": 1}, "observedEtag": "e1"}
    assert failed["phase"] == "Failed" and failed["error"] == "bad" and not failed["ready"]
    done = status.commissioned("c1", "---\n", "e2")
    assert done["ready"] and done["commit"] == "c1" and done["fluxVersion"] == FLUX_VERSION
    assert done["error"] is None and done["conditions"][0]["status"] == "True"
    assert SetupStatus.account_patch(SYNC, None) == {"sync": None}
