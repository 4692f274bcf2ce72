"""Pods → the Secrets they reference and the bounded ``secretRefs`` report (table tests, no
I/O)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from fplus import manifests
from fplus.edge_sync import secret_refs
from fplus.edge_sync.secret_refs import collect, pod_refs, report

AT = "2026-11-25T10:00:00Z"
STATUS_SCHEMA = manifests.load("schemas")["edge-cluster-status"]


def _pod(namespace: str | None = "factory", **spec: Any) -> dict[str, Any]:
    meta = {"name": "p"} | ({"namespace": namespace} if namespace is not None else {})
    return {"metadata": meta, "spec": {"containers": [{"name": "c", "image": "i"}], **spec}}


def _container(**fields: Any) -> list[dict[str, Any]]:
    return [{"name": "c", "image": "i", **fields}]


def _env_secret(name: Any, optional: bool | None = None) -> dict[str, Any]:
    ref: dict[str, Any] = {"name": name, "key": "k"}
    if optional is not None:
        ref["optional"] = optional
    return {"name": "E", "valueFrom": {"secretKeyRef": ref}}


CASES = [
    ("no references", _pod(), []),
    ("a secret volume", _pod(volumes=[{"name": "v", "secret": {"secretName": "db"}}]),
     ["factory/db"]),
    ("a projected volume: only its secret sources", _pod(volumes=[{"name": "v", "projected": {
        "sources": [{"secret": {"name": "tls"}}, {"configMap": {"name": "cm"}},
                    {"serviceAccountToken": {"path": "t"}}, {"secret": {"name": "ca"}}]}}]),
     ["factory/ca", "factory/tls"]),
    ("other volume kinds are not secrets", _pod(volumes=[
        {"name": "a", "configMap": {"name": "cm"}}, {"name": "b", "emptyDir": {}},
        {"name": "c", "persistentVolumeClaim": {"claimName": "data"}}]), []),
    ("env secretKeyRef, not configMapKeyRef or fieldRef", _pod(containers=_container(env=[
        _env_secret("db-password"), {"name": "A", "value": "x"},
        {"name": "B", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "k"}}},
        {"name": "C", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}])),
     ["factory/db-password"]),
    ("envFrom secretRef, not configMapRef", _pod(containers=_container(envFrom=[
        {"secretRef": {"name": "app-env"}}, {"configMapRef": {"name": "cm"}},
        {"prefix": "X_", "secretRef": {"name": "x-env"}}])),
     ["factory/app-env", "factory/x-env"]),
    ("init and ephemeral containers count",
     _pod(initContainers=_container(env=[_env_secret("init-secret")]),
          ephemeralContainers=_container(envFrom=[{"secretRef": {"name": "debug"}}])),
     ["factory/debug", "factory/init-secret"]),
    ("image pull secrets", _pod(imagePullSecrets=[{"name": "registry"}, {"name": "mirror"}]),
     ["factory/mirror", "factory/registry"]),
    ("optional references count too", _pod(
        volumes=[{"name": "v", "secret": {"secretName": "maybe", "optional": True}}],
        containers=_container(env=[_env_secret("perhaps", optional=True)],
                              envFrom=[{"secretRef": {"name": "if-any", "optional": True}}])),
     ["factory/if-any", "factory/maybe", "factory/perhaps"]),
    ("every kind at once, deduplicated", _pod(
        volumes=[{"name": "v", "secret": {"secretName": "db"}},
                 {"name": "w", "projected": {"sources": [{"secret": {"name": "db"}}]}}],
        containers=[*_container(env=[_env_secret("db")]),
                    {"name": "d", "image": "i", "envFrom": [{"secretRef": {"name": "db"}}]}],
        imagePullSecrets=[{"name": "db"}]), ["factory/db"]),
    ("names that cannot be a Secret's are left out", _pod(
        volumes=[{"name": "v", "secret": {}}, {"name": "w", "secret": {"secretName": ""}},
                 {"name": "x", "secret": {"secretName": "Upper"}},
                 {"name": "y", "secret": {"secretName": "a/b"}},
                 {"name": "z", "secret": {"secretName": "n" * 254}}],
        imagePullSecrets=[{}, {"name": 42}, {"name": "ok.example-1"}]),
     ["factory/ok.example-1"]),
    ("the longest valid reference is kept", _pod(
        "n" * 63, volumes=[{"name": "v", "secret": {"secretName": "s" * 253}}]),
     ["n" * 63 + "/" + "s" * 253]),
    ("a namespace longer than a label: nothing", _pod(
        "n" * 64, volumes=[{"name": "v", "secret": {"secretName": "s"}}]), []),
    ("malformed shapes never raise", _pod(
        volumes=[None, "v", {"name": "v", "secret": ["db"]}, {"projected": {"sources": "x"}},
                 {"projected": {"sources": [None, {"secret": None}]}}],
        containers=[None, {"env": "x", "envFrom": [None, {"secretRef": "db"}]},
                    {"env": [{"valueFrom": None}, {"valueFrom": {"secretKeyRef": 1}}]}],
        initContainers={"c": 1}, imagePullSecrets=["db", None]), []),
    ("no namespace: nothing", _pod(None, imagePullSecrets=[{"name": "registry"}]), []),
    ("no spec: nothing", {"metadata": {"name": "p", "namespace": "factory"}}, []),
    ("not a pod at all", ["a", "list"], []),
]


@pytest.mark.parametrize(("pod", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_pod_refs(pod: Any, expected: list[str]) -> None:
    assert sorted(pod_refs(pod)) == expected


def test_collect_takes_each_pods_namespace() -> None:
    pods = [_pod("factory", imagePullSecrets=[{"name": "registry"}]),
            _pod("line-1", imagePullSecrets=[{"name": "registry"}],
                 volumes=[{"name": "v", "secret": {"secretName": "db"}}]),
            _pod("factory", containers=_container(env=[_env_secret("db")]))]
    assert sorted(collect(pods)) == ["factory/db", "factory/registry", "line-1/db",
                                     "line-1/registry"]


def _valid(value: dict[str, Any]) -> bool:
    return Draft202012Validator(
        STATUS_SCHEMA, format_checker=Draft202012Validator.FORMAT_CHECKER).is_valid(
            {"secretRefs": value})


REPORTS = [
    ("sorted and deduplicated", report(["b/x", "a/y", "b/x", "a/x"], at=AT),
     {"secrets": ["a/x", "a/y", "b/x"], "truncated": False, "at": AT, "error": None}),
    ("none referenced", report([], at=AT),
     {"secrets": [], "truncated": False, "at": AT, "error": None}),
    ("pods not listed: unknown, not none",
     report(None, at=AT, error="listing Pods: Kubernetes API answered 403 Forbidden"),
     {"secrets": None, "truncated": False, "at": AT,
      "error": "listing Pods: Kubernetes API answered 403 Forbidden"}),
    ("an error wins over references", report(["a/x"], at=AT, error="e"),
     {"secrets": None, "truncated": False, "at": AT, "error": "e"}),
    ("an error cut to its limit", report(None, at=AT, error="e" * 500),
     {"secrets": None, "truncated": False, "at": AT, "error": "e" * 299 + "…"}),
    ("the first ones in sorted order", report(["c/x", "a/x", "b/x"], at=AT, limit=2),
     {"secrets": ["a/x", "b/x"], "truncated": True, "at": AT, "error": None}),
    ("exactly the limit is not truncated", report(["b/x", "a/x"], at=AT, limit=2),
     {"secrets": ["a/x", "b/x"], "truncated": False, "at": AT, "error": None}),
    ("a byte budget cuts too", report(["a/x", "b/x", "c/x"], at=AT, max_bytes=16),
     {"secrets": ["a/x", "b/x"], "truncated": True, "at": AT, "error": None}),
]


@pytest.mark.parametrize(("found", "expected"), [r[1:] for r in REPORTS],
                         ids=[r[0] for r in REPORTS])
def test_report(found: dict[str, Any], expected: dict[str, Any]) -> None:
    assert found == expected


def test_the_biggest_report_fits_the_status_schema() -> None:
    many = {f"ns-{i:04}/{'s' * 200}-{i}" for i in range(6000)}
    found = report(many, at=AT)
    assert found["truncated"] is True
    assert 0 < len(found["secrets"]) <= secret_refs.MAX_REFS
    assert found["secrets"] == sorted(many)[: len(found["secrets"])]
    assert len(json.dumps(found["secrets"])) <= secret_refs.MAX_BYTES
    assert _valid({k: v for k, v in found.items() if v is not None})

    short = report({f"ns/s-{i:05}" for i in range(6000)}, at=AT)
    assert len(short["secrets"]) == secret_refs.MAX_REFS and short["truncated"] is True
    assert _valid({k: v for k, v in short.items() if v is not None})


@pytest.mark.parametrize(("row", "value", "ok"), [
    ("references", {"secrets": ["a/b"], "truncated": False, "at": AT}, True),
    ("an error instead", {"at": AT, "error": "listing Pods: 403"}, True),
    ("at a Config Store time", {"secrets": [], "at": "2026-11-25T10:00:00.12Z"}, True),
    ("too many", {"secrets": [f"a/{i}" for i in range(5001)], "at": AT}, False),
    ("too long", {"secrets": ["n" * 63 + "/" + "s" * 254], "at": AT}, False),
    ("namespace too long", {"secrets": ["n" * 64 + "/s"], "at": AT}, False),
    ("no namespace", {"secrets": ["db"], "at": AT}, False),
    ("a trailing newline", {"secrets": ["a/b\n"], "at": AT}, False),
    ("duplicates", {"secrets": ["a/b", "a/b"], "at": AT}, False),
    ("no time", {"secrets": []}, False),
    ("not a time", {"secrets": [], "at": "now"}, False),
    ("an error too long", {"at": AT, "error": "e" * 301}, False),
    ("another key", {"at": AT, "count": 1}, False),
])
def test_the_status_schema(row: str, value: dict[str, Any], ok: bool) -> None:
    assert _valid(value) is ok, row


def test_every_entry_the_module_keeps_the_schema_keeps() -> None:
    """The module's pattern and the schema's agree on the edges of the rule."""
    names = ["a", "a-b", "a.b", "0", "a" * 253, "-a", "a-", "a_b", "A", ".a", "a."]
    for namespace in ["a", "a-b", "n" * 63, "n" * 64, "a.b", "-a"]:
        for name in names:
            ref = f"{namespace}/{name}"
            kept = bool(secret_refs.REF_PATTERN.fullmatch(ref))
            assert _valid({"secrets": [ref], "at": AT}) is kept, ref
