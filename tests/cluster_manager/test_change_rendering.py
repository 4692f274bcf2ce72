"""Previews render a template file once per distinct input and compare manifests type-exactly
(pure): the same repo as a whole render, a file reading nothing of the cluster rendered once
for every cluster, and ``1``, ``1.0`` and ``true`` told apart as their YAML is."""

from __future__ import annotations

from fplus.cluster_manager.changes.diffs import changed_names, same
from fplus.cluster_manager.changes.file_renders import FileRenders
from fplus.cluster_manager.changes.rendering import repo_documents

TEMPLATE = {"self-link.yaml": [{"kind": "GitRepository", "metadata": {"name": "{{ name }}"}}],
            "static.yaml": [{"kind": "Namespace", "metadata": {"name": "edge"}}],
            "values.yaml": [{"kind": "ConfigMap", "data": "{{ values }}"}],
            "gone.yaml": ["{{ missing }}"]}


def test_file_renders_match_a_whole_render_and_are_shared() -> None:
    renders = FileRenders()
    for n in range(3):
        ctx = {"name": f"c{n}", "values": {"x": n}}
        assert repo_documents(TEMPLATE, ctx, render_file=renders) == repo_documents(TEMPLATE,
                                                                                    ctx)
    one = repo_documents(TEMPLATE, {"name": "a", "values": {}}, render_file=renders)[0]
    two = repo_documents(TEMPLATE, {"name": "b", "values": {}}, render_file=renders)[0]
    assert one["edo/cluster/static.yaml"] is two["edo/cluster/static.yaml"]
    assert one["edo/cluster/values.yaml"] is two["edo/cluster/values.yaml"]
    assert "edo/cluster/gone.yaml" not in one


def test_changes_are_type_exact() -> None:
    assert same({"a": [1, {"b": "x"}]}, {"a": [1, {"b": "x"}]})
    assert not same({"a": 1}, {"a": True}) and not same({"a": 1}, {"a": 1.0})
    assert not same({"a": 1, "b": 2}, {"b": 2, "a": 1})  # written in another order
    found = changed_names({"f": [{"n": 1}], "g": [], "h": []}, {"f": [{"n": True}], "g": [],
                                                                  "i": []})
    assert (found.added, found.changed, found.removed) == (["i"], ["f"], ["h"])
