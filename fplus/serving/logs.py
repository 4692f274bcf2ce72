"""Logging set-up shared by every command: level from ``LOG_LEVEL``, one line per record."""

from __future__ import annotations

import logging
import os

FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
DEFAULT_LEVEL = "INFO"


def log_level(value: str | None) -> int:
    """The level a ``LOG_LEVEL`` value names (any case; unset or empty: INFO).

    Raises SystemExit with a one-line message naming ``LOG_LEVEL`` for anything else.
    """
    name = (value or DEFAULT_LEVEL).strip().upper()
    level = logging.getLevelNamesMapping().get(name)
    if level is None:
        raise SystemExit(f"LOG_LEVEL={value!r} is not a log level; "
                         f"use one of {', '.join(LEVELS)}")
    return level


def configure_logging() -> None:
    """Log to stderr at the level ``LOG_LEVEL`` names (INFO by default)."""
    logging.basicConfig(level=log_level(os.environ.get("LOG_LEVEL")), format=FORMAT)
