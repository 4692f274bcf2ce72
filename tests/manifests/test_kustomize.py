"""``kubectl kustomize`` builds the rendered files laid out as in a cluster repo.

The files are written exactly as the repo writer writes them
(``fplus.git.repo``'s ACS document format: ``---`` before each document,
``...`` between) under ``edo/cluster/``. The ``kustomization.yaml`` listing them exists
only in the test's temp dir: the real repo has none
(Flux generates one for ``path: ./``).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import yaml

from tests.manifests.samples import objects, write_repo
from tests.toolchain import tool


def _canonical(docs: list[dict[str, Any]]) -> list[str]:
    return sorted(json.dumps(doc, sort_keys=True) for doc in docs)


def test_kubectl_kustomize_builds_the_repo(rendered: dict[str, list[dict[str, Any]]],
                                           tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    resources = write_repo(repo, rendered)
    assert sorted(resources) == ["edo/cluster/edge-sync.yaml", "edo/cluster/helm-charts.yaml",
                                 "edo/cluster/sealed-secrets-upstream.yaml",
                                 "edo/cluster/sealed-secrets.yaml", "edo/cluster/self-link.yaml"]
    env = {**os.environ, "HOME": str(tmp_path), "KUBECONFIG": str(tmp_path / "none")}
    result = subprocess.run([tool("kubectl"), "kustomize", str(repo)], capture_output=True,
                            text=True, env=env, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    built = [doc for doc in yaml.safe_load_all(result.stdout) if doc is not None]
    # kustomize changes nothing (no transformers): same objects, only reordered
    assert _canonical(built) == _canonical([doc for _, doc in objects(rendered)])
    # and orders the Namespace before anything that lives in it
    kinds = [doc["kind"] for doc in built]
    assert kinds.index("Namespace") < kinds.index("Role")


def test_written_files_parse_back_to_the_rendered_manifests(
        rendered: dict[str, list[dict[str, Any]]], tmp_path: Path) -> None:
    write_repo(tmp_path, rendered)
    for file, docs in rendered.items():
        text = (tmp_path / "edo" / "cluster" / file).read_text(encoding="utf-8")
        assert [d for d in yaml.safe_load_all(text) if d is not None] == docs
