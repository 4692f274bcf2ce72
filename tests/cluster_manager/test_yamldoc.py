"""ACS manifest format: ``---`` before each document, ``...`` between, key order kept."""

from __future__ import annotations

import yaml

from fplus.cluster_manager.yamldocs import load_documents, render_documents

REPO = {"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
        "metadata": {"name": "self-link", "namespace": "flux-system"},
        "spec": {"interval": "1m", "ref": {"branch": "main"}, "url": "https://git.example/x"}}
KUST = {"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
        "metadata": {"name": "self-link", "namespace": "flux-system"},
        "spec": {"prune": True, "version": "1.10", "enabled": "yes", "path": "./"}}


def test_exact_format_of_two_documents() -> None:
    assert render_documents([REPO, KUST]) == (
        "---\n"
        "apiVersion: source.toolkit.fluxcd.io/v1\n"
        "kind: GitRepository\n"
        "metadata:\n"
        "  name: self-link\n"
        "  namespace: flux-system\n"
        "spec:\n"
        "  interval: 1m\n"
        "  ref:\n"
        "    branch: main\n"
        "  url: https://git.example/x\n"
        "...\n"
        "---\n"
        "apiVersion: kustomize.toolkit.fluxcd.io/v1\n"
        "kind: Kustomization\n"
        "metadata:\n"
        "  name: self-link\n"
        "  namespace: flux-system\n"
        "spec:\n"
        "  prune: true\n"
        "  version: '1.10'\n"
        "  enabled: 'yes'\n"
        "  path: ./\n"
    )


def test_round_trip_and_determinism() -> None:
    docs = [REPO, KUST, {"list": [1, "2", None, {"a": "b"}]}, "plain scalar", {"empty": {}}]
    text = render_documents(docs)
    assert list(yaml.safe_load_all(text)) == docs
    assert load_documents(text) == docs
    assert render_documents([dict(d) if isinstance(d, dict) else d for d in docs]) == text
    assert text.count("\n...\n") == len(docs) - 1


def test_edge_cases() -> None:
    assert render_documents([]) == ""
    assert render_documents(["x"]) == "---\nx\n"
    assert load_documents("") == []


def test_remembered_documents_keep_their_types() -> None:
    """Documents that compare equal but differ in type never share a remembered rendering."""
    docs = [{"a": 1}, {"a": "1"}, {"a": True}, {"a": 1.0}, {"a": [1]}, {"a": "1"}, {"a": 1}]
    first = [render_documents([d]) for d in docs]
    again = [render_documents([d]) for d in docs]
    assert first == again
    assert [load_documents(text)[0] for text in first] == docs
    assert all(type(load_documents(text)[0]["a"]) is type(doc["a"])
               for text, doc in zip(first, docs, strict=True))
