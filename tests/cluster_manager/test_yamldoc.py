"""ACS manifest format: ``---`` before each document, ``...`` between, key order kept."""

from __future__ import annotations

import yaml

from fplus.cluster_manager.formats import manifest_yaml
from fplus.cluster_manager.formats.manifest_yaml import load_documents, render_documents

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


def _with(u: str) -> list[object]:
    """Documents holding the uuid ``u`` wherever a manifest might."""
    long = "word " * 14
    return [
        {"metadata": {"name": "edge-sync", "labels": {"factoryplus.app.amrc.co.uk/uuid": u}},
         "spec": {"url": f"https://git.example/uuid/{u}", "list": [u, 1, None, True]}},
        {"data": {f"key-{u}": u, "folded": f"{long}{u} {long}", "quoted": f"*{u}",
                  "colon": f"{u}: x", "hash": f"{u} #x", "control": f"\x00{u}\x07",
                  "run": f"00000000-0000-0000-0000-{u}", "lead": f"{u}0000", "empty": ""}},
        {"plain": "no uuid here", "n": 1.5},
        u,
    ]


UUIDS = ["0f3c1a52-6a8e-4b7e-9c1d-2b4e6f8a0c1e", "12345678-1234-4123-8123-123456789012",
         "e0000000-0000-4000-8000-000000000000", "00000000-0000-0000-0000-000000000001",
         "ffffffff-ffff-4fff-bfff-ffffffffffff", "1e100000-0000-4000-8000-000000000000"]


def test_documents_differing_by_a_uuid_render_as_each_would_alone() -> None:
    for u in UUIDS:
        assert render_documents(_with(u), u) == render_documents(_with(u))
    assert render_documents([{"a": UUIDS[0]}], "not-a-uuid") == "---\na: " + UUIDS[0] + "\n"


def test_documents_differing_by_a_uuid_are_dumped_once() -> None:
    doc = {"kind": "Deployment", "metadata": {"labels": {"uuid": UUIDS[0]}}, "spec": {"x": 7}}
    render_documents([doc], UUIDS[0])
    before = manifest_yaml._render_remembered.cache_info()
    other = {"kind": "Deployment", "metadata": {"labels": {"uuid": UUIDS[1]}}, "spec": {"x": 7}}
    text = render_documents([other], UUIDS[1])
    assert manifest_yaml._render_remembered.cache_info().misses == before.misses
    assert text == render_documents([other]) and UUIDS[1] in text
