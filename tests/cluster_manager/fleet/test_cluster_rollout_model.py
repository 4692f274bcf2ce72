"""Cluster rollouts as pure functions: the request's refusals, the targets, a cluster's
ready / failed state from its setup status and its edge, and one pass writing only the
begun step's configuration entries (a template rollout: pins, kept until an operator makes
the candidate the default, then removed)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import pytest

from fplus.cluster_manager.rollouts.cluster_entry import (
    TEMPLATE_APP,
    World,
    cluster_state,
    plan,
    request_errors,
    targets,
)

NOW = datetime(2026, 1, 1, tzinfo=UTC)
R = str(uuid.UUID(int=7))
SIX = [str(uuid.UUID(int=100 + n)) for n in range(6)]
TEMPLATE = {"self-link.yaml": [{"kind": "Kustomization"}]}


@pytest.mark.parametrize(("body", "field"), [
    ([], ""),
    ({"name": "x", "change": {}}, "change"),
    ({"name": "x", "change": {"fluxVersion": "2.7"}}, "change.fluxVersion"),
    ({"name": "x", "change": {"fluxVersion": "v2.7.5", "fluxTemplate": TEMPLATE}}, "change"),
    ({"name": "x", "change": {"fluxTemplate": {"a.yaml": []}}}, "change.fluxTemplate"),
    ({"name": "", "change": {"fluxVersion": "v2.7.5"}}, "name"),
    ({"name": "x", "change": {"fluxVersion": "v2.7.5"}, "clusters": ["nope"]}, "clusters"),
    ({"name": "x", "change": {"fluxVersion": "v2.7.5"}, "selector": {"matchLabels": 1}},
     "selector.matchLabels"),
    ({"name": "x", "change": {"fluxVersion": "v2.7.5"}, "rollout": {"steps": [{}]}},
     "rollout.steps[0]"),
    ({"name": "x", "change": {"fluxVersion": "v2.7.5"}, "other": 1}, ""),
])
def test_bad_requests_name_the_field(body: Any, field: str) -> None:
    assert field in request_errors(body)


def test_targets_selector_and_list_or_every_cluster() -> None:
    configs = {c: {"name": f"c{n}", "labels": {"ring": str(n % 2)}} for n, c in enumerate(SIX)}
    assert targets({}, configs) == SIX
    assert targets({"selector": {"matchLabels": {"ring": "0"}}, "clusters": [SIX[1]]},
                   configs) == [SIX[0], SIX[1], SIX[2], SIX[4]]


def test_ready_needs_the_new_commit_synced_and_degraded_fails() -> None:
    setup = {"ready": True, "phase": "Ready", "observedEtag": "e2", "commit": "new"}
    synced = {"appliedCommit": "new", "flux": {"total": 1, "ready": 1, "failed": 0}}
    assert cluster_state({}, "e1", setup, synced, "old", NOW)[0] == "progressing"
    assert cluster_state({}, "e2", setup, {}, "old", NOW)[0] == "progressing"
    assert cluster_state({}, "e2", setup, synced, "old", NOW)[0] == "ready"
    assert cluster_state({}, "e2", setup, synced | {"appliedCommit": "old"}, "old",
                         NOW)[0] == "progressing"
    assert cluster_state({}, "e2", setup, {}, "new", NOW)[0] == "ready"  # no new commit
    degraded = {"appliedCommit": "new", "flux": {"total": 1, "ready": 0, "failed": 1}}
    assert cluster_state({}, "e2", setup, degraded, "old", NOW)[0] == "failed"
    failed = {"phase": "Failed", "observedEtag": "e2", "error": "no Flux v9"}
    assert cluster_state({}, "e2", failed, {}, "old", NOW) == ("failed", "no Flux v9", None)


def _etag(cluster: str, config: dict[str, Any]) -> str:
    return f"etag-{cluster}-{len(config)}"


def _world(configs: dict[str, Any], statuses: dict[str, Any], entry: dict[str, Any],
           setups: dict[str, Any] | None = None, edges: dict[str, Any] | None = None,
           templates: dict[str, Any] | None = None) -> World:
    """The world; a configuration entry's etag changes with its number of keys."""
    return World({R: entry}, configs, {c: _etag(c, v) for c, v in configs.items()}, setups or {},
                 edges or {}, statuses, templates or {})


def test_a_pass_writes_the_begun_step_only_then_waits_then_moves_on() -> None:
    configs = {c: {"name": f"c{n}"} for n, c in enumerate(SIX)}
    setups = {c: {"ready": True, "observedEtag": _etag(c, configs[c]), "commit": "old"}
              for c in SIX}
    entry = {"name": "up", "change": {"fluxVersion": "v2.7.5"},
             "rollout": {"steps": [{"clusters": 2}, {"clusters": 2}]}}
    first = plan(_world(configs, {}, entry, setups), NOW)
    assert set(first.configs) == set(SIX[:2])
    assert all(c["fluxVersion"] == "v2.7.5" for c in first.configs.values())
    status = first.statuses[R]
    assert status["kind"] == "cluster" and status["baseline"] == dict.fromkeys(SIX[:2], "old")
    configs |= first.configs
    waiting = plan(_world(configs, {R: status}, entry, setups), NOW)
    assert waiting.configs == {} and R not in waiting.statuses
    for c in SIX[:2]:
        setups[c] = {"ready": True, "observedEtag": _etag(c, configs[c]), "commit": "new"}
    edges = {c: {"appliedCommit": "new", "flux": {"total": 1, "ready": 1, "failed": 0}}
             for c in SIX[:2]}
    moved = plan(_world(configs, {R: status}, entry, setups, edges), NOW)
    assert set(moved.configs) == set(SIX[2:4]) and moved.statuses[R]["step"] == 1


def test_a_template_rollout_pins_then_promotes_and_unpins() -> None:
    configs = {c: {"name": f"c{n}"} for n, c in enumerate(SIX[:2])}
    setups = {c: {"ready": True, "observedEtag": _etag(c, configs[c]), "commit": "old"}
              for c in SIX[:2]}
    entry = {"name": "t", "change": {"fluxTemplate": TEMPLATE},
             "rollout": {"steps": [{"clusters": 1}]}}
    first = plan(_world(configs, {}, entry, setups), NOW)
    assert first.templates == {R: TEMPLATE}
    assert first.configs == {SIX[0]: {"name": "c0", "fluxTemplate": R}}
    configs |= first.configs
    status = first.statuses[R]
    waiting = plan(_world(configs, {R: status}, entry, setups, templates={R: TEMPLATE}), NOW)
    assert waiting.configs == {} and waiting.templates == {}  # not rendered yet
    # rendered with the candidate: no new commit (same content), so ready
    setups[SIX[0]] = {"ready": True, "observedEtag": _etag(SIX[0], configs[SIX[0]]),
                      "commit": "old"}
    second = plan(_world(configs, {R: status}, entry, setups, templates={R: TEMPLATE}), NOW)
    assert second.configs == {SIX[1]: {"name": "c1", "fluxTemplate": R}}
    configs |= second.configs
    setups[SIX[1]] = {"ready": True, "observedEtag": _etag(SIX[1], configs[SIX[1]]),
                      "commit": "old"}
    done = plan(_world(configs, {R: second.statuses[R]}, entry, setups,
                       templates={R: TEMPLATE}), NOW)
    status = done.statuses[R]
    assert status["state"] == "Complete" and status["promoted"] is False
    assert done.templates == {} and done.configs == {}  # the pins stay; no default written
    waiting = plan(_world(configs, {R: status}, entry, setups, templates={R: TEMPLATE}), NOW)
    assert waiting.configs == {} and waiting.statuses == {}
    both = {R: TEMPLATE, TEMPLATE_APP: TEMPLATE}  # an operator made it the default
    unpin = plan(_world(configs, {R: status}, entry, setups, templates=both), NOW)
    assert unpin.templates == {}
    assert unpin.configs == {SIX[0]: {"name": "c0"}, SIX[1]: {"name": "c1"}}
    assert unpin.statuses[R]["promoted"] is True
    configs |= unpin.configs
    finished = plan(_world(configs, {R: unpin.statuses[R]}, entry, setups, templates=both),
                    NOW)
    assert finished.configs == {} and finished.statuses == {} and finished.templates == {}
