"""A cluster's values of a fleet deployment: each level of the precedence, the placeholders
of the cluster, and the checks of a request's layers (no process)."""

from __future__ import annotations

import hashlib
import json
import uuid
from datetime import UTC, datetime
from typing import Any

import pytest

from fplus.cluster_manager.model.deployment_values import ClusterMeta, ValuesError, resolve
from fplus.cluster_manager.rollouts.fleet_entry import Fleet, request_errors, revision
from fplus.cluster_manager.rollouts.fleet_expansion import expand

CHART = str(uuid.UUID(int=1))
A, B = str(uuid.UUID(int=10)), str(uuid.UUID(int=11))
F = str(uuid.UUID(int=20))
LEEDS = ClusterMeta(A, "line-1", "fplus-edge", {"site": "leeds", "profile": "big"})
YORK = ClusterMeta(B, "line-2", "fplus-edge", {"site": "york"})


def fleet(**over: Any) -> Fleet:
    found = Fleet.parse(F, {"name": "historian", "chart": CHART, "selector": {}} | over)
    assert not isinstance(found, str), found
    return found


def test_fleet_values_alone() -> None:
    assert fleet(values={"a": 1, "o": {"x": 1}}).values_for(LEEDS) == {"a": 1, "o": {"x": 1}}


def test_customizations_all_matching_in_order_over_values() -> None:
    f = fleet(values={"a": 0, "o": {"x": 0, "y": 0}}, customizations=[
        {"selector": {"matchLabels": {"site": "leeds"}}, "values": {"a": 1, "o": {"x": 1}}},
        {"selector": {"matchLabels": {"site": "york"}}, "values": {"a": 9}},
        {"selector": {}, "values": {"a": 2, "b": 2}}])
    assert f.values_for(LEEDS) == {"a": 2, "b": 2, "o": {"x": 1, "y": 0}}
    assert f.values_for(YORK) == {"a": 2, "b": 2, "o": {"x": 0, "y": 0}}


def test_profile_over_customizations() -> None:
    f = fleet(values={"a": 0}, profiles={"big": {"a": 3, "p": True}},
              customizations=[{"selector": {}, "values": {"a": 1}}])
    assert f.values_for(LEEDS) == {"a": 3, "p": True}
    assert f.values_for(YORK) == {"a": 1}  # no profile label: no profile


def test_profile_label_is_the_fleets_choice() -> None:
    f = fleet(profileLabel="site", profiles={"york": {"a": "y"}, "leeds": {"a": "l"}})
    assert f.values_for(LEEDS) == {"a": "l"} and f.values_for(YORK) == {"a": "y"}


def test_a_profile_the_fleet_lacks_fails_the_cluster() -> None:
    with pytest.raises(ValuesError, match="profile=big names no profile"):
        fleet(profiles={"small": {}}).values_for(LEEDS)


def test_override_over_profile() -> None:
    f = fleet(profiles={"big": {"a": 3, "k": 1}}, overrides={A: {"a": 4}})
    assert f.values_for(LEEDS) == {"a": 4, "k": 1}
    assert fleet(overrides={A: {"a": 4}}).values_for(YORK) == {}


def test_placeholders_of_the_cluster() -> None:
    f = fleet(values={"broker": "mqtt.{{cluster.labels.site}}.example:1883",
                      "id": "{{cluster.uuid}}", "who": "{{cluster.name}}/{{cluster.namespace}}",
                      "labels": "{{cluster.labels}}", "line": "{{cluster.labels.line:0}}"})
    assert f.values_for(LEEDS) == {"broker": "mqtt.leeds.example:1883", "id": A,
                                   "who": "line-1/fplus-edge",
                                   "labels": {"site": "leeds", "profile": "big"}, "line": "0"}


def test_templates_resolve_after_every_layer() -> None:
    f = fleet(values={"s": "{{cluster.labels.nope}}"}, overrides={A: {"s": "fixed"}})
    assert f.values_for(LEEDS) == {"s": "fixed"}
    with pytest.raises(ValuesError, match=r"\{\{cluster.labels.nope\}\}"):
        f.values_for(YORK)


def test_label_keys_with_dots_and_slashes() -> None:
    meta = ClusterMeta(A, labels={"example.com/site": "leeds"})
    assert resolve({"s": "{{cluster.labels.example.com/site}}"}, meta) == {"s": "leeds"}


def test_other_placeholders_are_left_as_written() -> None:
    values: dict[str, Any] = {"tpl": "{{ .Release.Name }}-{{cluster.name}}", "edge": "{{uuid}}",
              "{{name}}": ["{{ include \"x\" . }}"]}
    assert resolve(values, LEEDS) == {"tpl": "{{ .Release.Name }}-line-1", "edge": "{{uuid}}",
                                      "{{name}}": ["{{ include \"x\" . }}"]}


def test_hostname_only_when_pinned() -> None:
    assert resolve({"h": "{{hostname}}"}, ClusterMeta(A, hostname="node-1")) == {"h": "node-1"}
    assert resolve({"h": "{{hostname:any}}"}, LEEDS) == {"h": "any"}
    with pytest.raises(ValuesError, match=r"\{\{hostname\}\}"):
        resolve({"h": "{{hostname}}"}, LEEDS)


def test_resolved_values_do_not_share_the_entry() -> None:
    f = fleet(values={"o": {"x": [1]}})
    got: Any = f.values_for(LEEDS)
    got["o"]["x"].append(2)
    assert f.values_for(LEEDS) == {"o": {"x": [1]}}


def body(**over: Any) -> dict[str, Any]:
    return {"name": "historian", "chart": CHART, "selector": {}} | over


@pytest.mark.parametrize(("over", "field"), [
    ({"customizations": {}}, "customizations"),
    ({"customizations": [{"selector": {}}]}, "customizations[0]"),
    ({"customizations": [{"selector": {"matchLabels": {"a b": "x"}}, "values": {}}]},
     "customizations[0].selector.matchLabels.a b"),
    ({"customizations": [{"selector": {}, "values": []}]}, "customizations[0].values"),
    ({"profiles": []}, "profiles"),
    ({"profiles": {"not a name": {}}}, "profiles.not a name"),
    ({"profiles": {"big": 1}}, "profiles.big"),
    ({"profileLabel": "a b"}, "profileLabel"),
    ({"values": {"x": "{{cluster.nmae}}"}}, "values"),
    ({"overrides": {A: {"x": "{{cluster.labels}}{{cluster.zone}}"}}}, "overrides"),
    ({"profiles": {"big": {"x": "{{cluster.id}}"}}}, "profiles.big"),
])
def test_request_errors_name_the_field(over: dict[str, Any], field: str) -> None:
    errors = request_errors(body(**over))
    assert field in errors, errors


def test_a_request_with_every_layer_is_accepted() -> None:
    assert request_errors(body(
        values={"b": "{{cluster.labels.site:none}}", "t": "{{ .Release.Name }}"},
        customizations=[{"selector": {"matchLabels": {"site": "leeds"}}, "values": {"a": 1}}],
        profiles={"big": {"a": "{{hostname:x}}"}}, profileLabel="example.com/profile",
        overrides={A: {"a": "{{cluster.name}}"}})) == {}


CONFIGS = {A: {"name": "line-1", "namespace": "ns", "labels": {"site": "leeds"}},
           B: {"name": "line-2", "namespace": "ns", "labels": {"tier": "x"}}}


def test_expansion_writes_each_clusters_own_values_and_fails_one_without() -> None:
    spec = body(values={"broker": "{{cluster.labels.site}}", "n": "{{cluster.namespace}}"})
    plan = expand({F: spec}, CONFIGS, {})
    assert [(d.cluster, d.values) for d, _ in plan.writes] == [
        (A, {"broker": "leeds", "n": "ns"})]
    assert plan.failures == {F: {B: "values: {{cluster.labels.site}} has no value on this "
                                    "cluster and no default (write "
                                    "{{cluster.labels.site:<default>}} or set it)"}}
    assert set(plan.targets[F]) == {A, B} and plan.errors == {} and plan.conflicts == {}


def test_a_failing_clusters_deployment_is_kept_as_it_was() -> None:
    before = {d.uuid: d.entry() for d, _ in expand({F: body(values={"s": "v1"})},
                                                   CONFIGS, {}).writes}
    plan = expand({F: body(values={"s": "{{cluster.labels.site}}"})}, CONFIGS, before)
    assert [(d.cluster, d.values) for d, _ in plan.writes] == [(A, {"s": "leeds"})]
    assert plan.removals == [] and B in plan.failures[F]


def test_a_label_change_changes_the_values() -> None:
    spec = body(values={"s": "{{cluster.labels.site:none}}"})
    before = {d.uuid: d.entry() for d, _ in expand({F: spec}, CONFIGS, {}).writes}
    moved = CONFIGS | {A: CONFIGS[A] | {"labels": {"site": "york"}}}
    plan = expand({F: spec}, moved, before)
    assert [(d.cluster, d.values, new) for d, new in plan.writes] == [
        (A, {"s": "york"}, False)]


def test_a_paced_rollout_counts_a_cluster_without_its_values_as_failed() -> None:
    spec = body(values={"s": "{{cluster.labels.site}}"}, rollout={"steps": [{"clusters": 2}]},
                createdAt="2026")
    plan = expand({F: spec}, CONFIGS, {}, rollouts={}, edges={},
                  now=datetime(2026, 1, 1, tzinfo=UTC))
    assert [(d.cluster, d.values) for d, _ in plan.writes] == [(A, {"s": "leeds"})]
    assert B in plan.failures[F]
    status: Any = plan.rollouts[F]
    assert status["state"] == "Halted", status
    assert "{{cluster.labels.site}}" in json.dumps(status)


def test_an_entry_without_the_new_fields_keeps_its_revision() -> None:
    entry = body(values={"a": 1})
    before = hashlib.sha256(json.dumps(
        {"name": "historian", "chart": CHART, "values": {"a": 1}, "overrides": None},
        sort_keys=True).encode()).hexdigest()[:16]
    assert revision(entry) == before
    assert revision(entry | {"profiles": {"big": {}}}) != before
