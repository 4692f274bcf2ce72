"""Assert rewriting done once, in pytest-xdist's controller, before the workers start.

pytest rewrites the asserts of every test module and conftest, and keeps the result as a pyc
beside it. In a fresh checkout the workers all start at once, so each would rewrite every
module itself (6.6 CPU-s a worker here). The controller fills the cache first instead: once,
about 7 CPU-s in a fresh checkout, and a read of each source when the cache is fresh.

This uses pytest's private rewrite functions (pytest is pinned in constraints.txt); if they
move, nothing is warmed and the workers rewrite as before.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

try:
    from _pytest.assertion import rewrite
    from _pytest.assertion.rewrite import assertstate_key
except ImportError:  # pragma: no cover - another pytest: the workers rewrite themselves
    rewrite = None


def _test_modules(root: Path) -> list[Path]:
    """The files pytest rewrites: test modules (``test_*.py``) and conftests."""
    return sorted(p for p in root.rglob("*.py")
                  if p.name.startswith("test_") or p.name == "conftest.py")


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    workers = getattr(config.option, "numprocesses", None)
    if (rewrite is None or sys.dont_write_bytecode or hasattr(config, "workerinput")
            or not workers or config.getini("python_files") != ["test_*.py", "*_test.py"]):
        return
    try:
        state = config.stash[assertstate_key]
        for fn in _test_modules(Path(__file__).parent):
            cache_dir = rewrite.get_cache_dir(fn)
            pyc = cache_dir / (fn.name[:-3] + rewrite.PYC_TAIL)
            if rewrite._read_pyc(fn, pyc, state.trace) is None and rewrite.try_makedirs(cache_dir):
                source_hash, code = rewrite._rewrite_test(fn, config)
                rewrite._write_pyc(state, code, source_hash, pyc)
    except (AttributeError, KeyError, TypeError):  # internals moved: the workers rewrite
        return
