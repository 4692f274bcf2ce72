"""Canonical JSON text: what is stored, and what decides whether a write changed anything."""

from __future__ import annotations

import json
from typing import Any


def canonical(value: Any) -> str:
    """Compact JSON with sorted keys, so equal documents have equal text."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def parse(text: str) -> Any:
    """Parse stored JSON text."""
    return json.loads(text)
