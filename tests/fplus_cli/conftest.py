"""What every ``fplus`` test runs with."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


@pytest.fixture
def home(tmp_path: Path) -> dict[str, str]:
    """An environment with its own config dir and no FPLUS_* credentials of the caller."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("FPLUS_") and k != "CONFIG_STORE_URL"}
    return env | {"XDG_CONFIG_HOME": str(tmp_path / "config"), "NO_COLOR": "1"}
