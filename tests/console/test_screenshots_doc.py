"""The console's pictures in docs/ are the browser tests' own: every picture docs/console.md
shows is in docs/console/, taken by tests/console/test_accessibility.py (so ``make
screenshots`` makes it again), a 1366-pixel-wide window and small; and no picture there is
left unlinked."""

from __future__ import annotations

import re
import struct
from pathlib import Path

from tests.console.test_accessibility import PICTURES

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "console.md"


def _shown() -> list[str]:
    return re.findall(r"!\[[^\]]*\]\(([^)\s]+)\)", PAGE.read_text())


def test_every_picture_is_taken_by_the_browser_tests() -> None:
    shown = _shown()
    taken = set(PICTURES)
    assert {"clusters", "cluster", "fleet-deployment", "rollout"} <= taken
    assert shown and all(p.startswith("console/") for p in shown), shown
    for picture in shown:
        file = PAGE.parent / picture
        assert file.stem in taken, f"{picture} is not one the browser tests take"
        header = file.read_bytes()[:24]
        assert header[:8] == b"\x89PNG\r\n\x1a\n", picture
        width, _ = struct.unpack(">II", header[16:24])
        assert width == 1366 and file.stat().st_size < 250_000, picture
    linked = {Path(p).name for p in shown}
    assert {f.name for f in (PAGE.parent / "console").glob("*.png")} == linked
