"""Longest modules first under pytest-xdist.

With ``--dist loadfile`` a module runs whole on one worker, so a long module handed out last
keeps one worker busy while the others idle. This plugin orders the collection by each
module's recorded wall time, longest first (tests keep their order within a module), and the
Makefile passes ``--no-loadscope-reorder`` so xdist hands modules out in that order.

The times live in ``tests/module_durations.json`` (module path to seconds). A module missing
from it counts as the median; a stale file only gives a worse order, never another result.
``--record-durations`` (``make test-durations``) rewrites it from a run's own timings, keeping
the modules that run did not include.
"""

from __future__ import annotations

import json
import statistics
from collections import Counter
from pathlib import Path

import pytest

DURATIONS = Path(__file__).with_name("module_durations.json")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--record-durations", action="store_true",
                     help=f"write each module's wall time into {DURATIONS.name}")


def recorded() -> dict[str, float]:
    """The recorded module times; none when the file is missing or unreadable."""
    try:
        found = json.loads(DURATIONS.read_text())
    except (OSError, ValueError):
        return {}
    return {str(k): float(v) for k, v in found.items()} if isinstance(found, dict) else {}


def module_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def longest_first(items: list[pytest.Item], times: dict[str, float]) -> list[pytest.Item]:
    """``items`` grouped by module, the longest module first; a stable order for equal times
    (by path), so every xdist worker collects the same list."""
    default = statistics.median(times.values()) if times else 0.0
    def key(pair: tuple[int, pytest.Item]) -> tuple[float, str, int]:
        index, item = pair
        module = module_of(item.nodeid)
        return (-times.get(module, default), module, index)

    return [item for _, item in sorted(enumerate(items), key=key)]


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items[:] = longest_first(items, recorded())


class DurationRecorder:
    """Sums setup, call and teardown per module from the reports (on the xdist controller,
    the workers' reports arrive here too) and merges them into the file at the end."""

    def __init__(self) -> None:
        self.seconds: Counter[str] = Counter()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.seconds[module_of(report.nodeid)] += report.duration

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if hasattr(session.config, "workerinput") or not self.seconds:
            return  # an xdist worker: the controller writes
        merged = recorded() | {m: round(s, 1) for m, s in self.seconds.items()}
        DURATIONS.write_text(json.dumps(dict(sorted(merged.items())), indent=0) + "\n")


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("--record-durations"):
        config.pluginmanager.register(DurationRecorder(), "record-durations")
