"""Where the tests find the project's shared files (CRD schemas, the pinned Flux release).

They live outside the repo, in ``../shared`` beside it, or wherever ``FPLUS_SHARED`` points.
Nothing reads them while tests are collected: a test that needs one calls ``need(path)``,
which skips the test with the reason when the file is absent (and fails it under
``CI=true``, where the shared files are always laid out).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ENV = "FPLUS_SHARED"
SHARED = Path(os.environ.get(ENV) or Path(__file__).resolve().parents[2] / "shared")
FLUX_INSTALL = SHARED / "flux" / "flux-install-v2.7.5.yaml"
CRDS = SHARED / "crds"


def need(path: Path) -> Path:
    """``path`` (a file or folder of the shared files), or skip the test when it is absent."""
    if not path.exists():
        reason = f"needs {path} (the shared files: ${ENV}, else ../shared beside the repo)"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    return path
