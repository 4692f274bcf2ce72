"""Canonical JSON text: what is stored, and what decides whether a write changed anything."""

from __future__ import annotations

import json

from fplus.jsontypes import JsonValue


def canonical(value: object) -> str:
    """Compact JSON with sorted keys, so equal documents have equal text."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def parse(text: str) -> JsonValue:
    """Parse stored JSON text."""
    parsed: JsonValue = json.loads(text)
    return parsed
