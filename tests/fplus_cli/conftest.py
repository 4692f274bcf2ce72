"""What every ``fplus`` test runs with."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


@pytest.fixture
def home(tmp_path: Path) -> dict[str, str]:
    """An environment with its own config dir, no FPLUS_* credentials of the caller, and no
    terminal width of the caller's (``COLUMNS``: tables would be cut to it)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("FPLUS_") and k not in ("CONFIG_STORE_URL", "COLUMNS", "LINES")}
    return env | {"XDG_CONFIG_HOME": str(tmp_path / "config"), "NO_COLOR": "1"}
