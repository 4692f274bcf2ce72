"""Value types for the services' command-line options (argparse's ``type=``): each takes a
number within its range and refuses anything else naming the range, so a bad flag or a bad
default from the environment stops the service at once with one line."""

from __future__ import annotations

import argparse
from collections.abc import Callable


def number(low: float, high: float, what: str = "a number") -> Callable[[str], float]:
    """A number from ``low`` to ``high`` (``what``: how the refusal names it, such as "a
    number of seconds")."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = float("nan")
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(
                f"{text!r} is not {what} from {_shown(low)} to {_shown(high)}")
        return value
    return parse


def whole(low: int = 0, high: int | None = None) -> Callable[[str], int]:
    """A whole number of at least ``low`` (and at most ``high``, if given)."""
    def parse(text: str) -> int:
        if not text.isdigit() or int(text) < low or (high is not None and int(text) > high):
            bound = f"from {low} to {high}" if high is not None else f"from {low}"
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number {bound}")
        return int(text)
    return parse


def _shown(value: float) -> str:
    """``value`` as a reader takes it in: ``1,000,000``, not ``1e+06``."""
    return f"{int(value):,}" if float(value).is_integer() else f"{value:g}"
