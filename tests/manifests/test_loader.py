"""The ``manifests`` package: a tiny loader over its YAML package data."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from fplus import manifests


def test_names() -> None:
    assert manifests.names() == ["bootstrap-script", "flux-template", "k8s-resource-templates",
                                 "schemas"]


@pytest.mark.parametrize("name", manifests.names())
def test_load_returns_a_fresh_mapping(name: str) -> None:
    first = manifests.load(name)
    assert isinstance(first, dict) and first
    first.clear()
    assert manifests.load(name)  # callers may mutate what they get


@pytest.mark.parametrize("name", ["nope", "../manifests/schemas", "schemas.yaml", "",
                                  "/etc/passwd", "__init__"])
def test_unknown_names_are_refused(name: str) -> None:
    with pytest.raises(KeyError):
        manifests.load(name)


def test_loader_imports_nothing_of_ours() -> None:
    tree = ast.parse(Path(manifests.__file__).read_text(encoding="utf-8"))
    imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                for alias in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(tree)
                 if isinstance(node, ast.ImportFrom) and node.module}
    assert imported <= {"__future__", "importlib", "typing", "yaml"}
