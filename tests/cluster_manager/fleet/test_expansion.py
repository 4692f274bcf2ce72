"""The fleet expansion as a pure function: fleet entries + cluster configurations + Edge
deployments -> writes, removals, conflicts (no process)."""

from __future__ import annotations

import uuid
from typing import Any

from fplus.cluster_manager.model.edge_deployments import Deployment
from fplus.cluster_manager.rollouts.fleet_entry import Fleet, member_uuid, request_errors
from fplus.cluster_manager.rollouts.fleet_expansion import Plan, expand

CHART = str(uuid.UUID(int=1))
A, B, C = (str(uuid.UUID(int=n)) for n in (10, 11, 12))
F, G = str(uuid.UUID(int=20)), str(uuid.UUID(int=21))
CONFIGS = {A: {"name": "a", "labels": {"site": "leeds"}},
           B: {"name": "b", "labels": {"site": "leeds", "tier": "line"}},
           C: {"name": "c", "labels": {"site": "york"}}}


def fleet(**over: Any) -> dict[str, Any]:
    return {"name": "historian", "chart": CHART,
            "selector": {"matchLabels": {"site": "leeds"}}, "createdAt": "2026-01-01"} | over


def entries(plan: Plan) -> dict[str, dict[str, Any]]:
    """The plan's writes as stored entries (without the creation time)."""
    out = {}
    for d, _ in plan.writes:
        entry = d.entry()
        entry.pop("createdAt")
        out[d.uuid] = entry
    return out


def applied(plan: Plan, deployments: dict[str, Any]) -> dict[str, Any]:
    """``deployments`` after the plan."""
    after = dict(deployments)
    for d, _ in plan.writes:
        after[d.uuid] = d.entry()
    for gone in plan.removals:
        after.pop(gone)
    return after


def test_one_owned_deployment_per_matching_cluster() -> None:
    plan = expand({F: fleet(values={"a": 1})}, CONFIGS, {})
    assert entries(plan) == {
        member_uuid(F, A): {"name": "historian", "cluster": A, "chart": CHART,
                            "values": {"a": 1}, "fleetDeployment": F},
        member_uuid(F, B): {"name": "historian", "cluster": B, "chart": CHART,
                            "values": {"a": 1}, "fleetDeployment": F}}
    assert all(new for _, new in plan.writes)
    assert plan.removals == [] and plan.conflicts == {} and plan.errors == {}
    assert plan.targets == {F: {A: member_uuid(F, A), B: member_uuid(F, B)}}


def test_applying_twice_changes_nothing() -> None:
    first = expand({F: fleet()}, CONFIGS, {})
    again = expand({F: fleet()}, CONFIGS, applied(first, {}))
    assert (again.writes, again.removals) == ([], [])


def test_member_uuids_are_deterministic_and_distinct() -> None:
    assert member_uuid(F, A) == member_uuid(F, A)
    assert len({member_uuid(F, A), member_uuid(F, B), member_uuid(G, A)}) == 3


def test_listed_clusters_join_the_selected_ones_and_overrides_merge() -> None:
    plan = expand({F: fleet(clusters=[C], values={"x": {"y": 1, "z": 2}},
                            overrides={C: {"x": {"z": 3}}})}, CONFIGS, {})
    assert entries(plan)[member_uuid(F, C)]["values"] == {"x": {"y": 1, "z": 3}}
    assert entries(plan)[member_uuid(F, A)]["values"] == {"x": {"y": 1, "z": 2}}


def test_only_listed_clusters_without_a_selector() -> None:
    spec = fleet(clusters=[C])
    del spec["selector"]
    assert set(expand({F: spec}, CONFIGS, {}).targets[F]) == {C}


def test_an_unconfigured_or_deleted_cluster_is_not_targeted() -> None:
    gone = str(uuid.UUID(int=99))
    assert set(expand({F: fleet(clusters=[gone])}, CONFIGS, {}).targets[F]) == {A, B}


def test_relabel_adds_one_and_removes_one() -> None:
    before = applied(expand({F: fleet()}, CONFIGS, {}), {})
    relabelled = CONFIGS | {A: {"name": "a", "labels": {"site": "york"}},
                            C: {"name": "c", "labels": {"site": "leeds"}}}
    plan = expand({F: fleet()}, relabelled, before)
    assert [(d.uuid, new) for d, new in plan.writes] == [(member_uuid(F, C), True)]
    assert plan.removals == [member_uuid(F, A)]


def test_a_change_of_the_fleet_deployment_rewrites_every_member() -> None:
    before = applied(expand({F: fleet()}, CONFIGS, {}), {})
    plan = expand({F: fleet(values={"v": 2})}, CONFIGS, before)
    assert sorted((d.uuid, new) for d, new in plan.writes) == sorted(
        [(member_uuid(F, A), False), (member_uuid(F, B), False)])
    created = {d.created_at for d, _ in plan.writes}
    assert created == {before[member_uuid(F, A)]["createdAt"]}


def test_deleting_the_fleet_deployment_removes_only_its_own() -> None:
    person = {"name": "other", "cluster": A, "chart": CHART}
    before = applied(expand({F: fleet()}, CONFIGS, {}), {"p": person})
    plan = expand({}, CONFIGS, before)
    assert plan.writes == []
    assert plan.removals == sorted([member_uuid(F, A), member_uuid(F, B)])


def test_a_persons_deployment_of_the_same_name_is_a_conflict_never_touched() -> None:
    person = {"name": "historian", "cluster": A, "chart": CHART, "values": {"mine": 1}}
    plan = expand({F: fleet()}, CONFIGS, {"p": person})
    assert [d.uuid for d, _ in plan.writes] == [member_uuid(F, B)]
    assert "p" not in plan.removals
    assert "per-cluster deployment" in plan.conflicts[F][A] and A in plan.targets[F]


def test_two_fleet_deployments_of_one_name_the_older_wins() -> None:
    older, newer = fleet(createdAt="2026-01-01"), fleet(createdAt="2026-02-01")
    plan = expand({G: older, F: newer}, CONFIGS, {})
    assert {d.fleet for d, _ in plan.writes} == {G}
    assert set(plan.conflicts) == {F} and set(plan.conflicts[F]) == {A, B}
    # once written, the older keeps them whatever the order
    again = expand({G: older, F: newer}, CONFIGS, applied(plan, {}))
    assert (again.writes, again.removals) == ([], [])
    assert f"fleet deployment {G}'s" in again.conflicts[F][A]


def test_a_malformed_fleet_deployment_keeps_its_deployments_and_says_why() -> None:
    before = applied(expand({F: fleet()}, CONFIGS, {}), {})
    plan = expand({F: fleet(selector={"matchLabels": {"bad key!": "x"}})}, CONFIGS, before)
    assert (plan.writes, plan.removals) == ([], [])
    assert "bad key!" in plan.errors[F]


def test_a_deployment_at_the_member_uuid_not_owned_is_left_alone() -> None:
    foreign = {"name": "historian", "cluster": A, "chart": CHART}
    plan = expand({F: fleet()}, CONFIGS, {member_uuid(F, A): foreign})
    assert member_uuid(F, A) not in {d.uuid for d, _ in plan.writes}
    assert member_uuid(F, A) not in plan.removals
    assert "not this fleet deployment's" in plan.conflicts[F][A]


def test_unparseable_deployments_and_configs_are_ignored() -> None:
    plan = expand({F: fleet()}, CONFIGS | {C: "junk"}, {"x": {"name": 1}})
    assert set(plan.targets[F]) == {A, B} and plan.removals == []


def test_request_errors_name_each_field() -> None:
    errors = request_errors({"name": "", "chart": "nope", "values": [],
                             "selector": {"matchExpressions": [{"key": "k", "operator": "Is"}]},
                             "clusters": ["x"], "overrides": {A: 1}, "bogus": {}})
    assert set(errors) == {"", "name", "chart", "values",
                           "selector.matchExpressions[0].operator", "clusters",
                           f"overrides.{A}"}
    assert request_errors({"name": "n", "chart": CHART})["selector"]
    assert request_errors({"name": "n", "chart": CHART, "clusters": [A]}) == {}
    assert request_errors({"values": {}}, partial=True) == {}


def test_fleet_parse() -> None:
    parsed = Fleet.parse(F, fleet())
    assert isinstance(parsed, Fleet) and parsed.created_at == "2026-01-01"
    assert isinstance(Fleet.parse(F, {"name": "x"}), str)
    assert Deployment.parse("d", {}) is None
