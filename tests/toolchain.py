"""The pinned edge toolchain for tests: a built binary, or a skip that says how to build it."""

from __future__ import annotations

import os

import pytest

from harness import edgetools


def tool(name: str, *, of: str | None = None) -> str:
    """The path of a binary ``make edge-tools`` builds (kubectl, flux, kubeseal, …); skips
    the test with the build command when it is not built on this machine."""
    try:
        return str(edgetools.binary(name, of=of))
    except edgetools.ToolMissing as missing:
        pytest.skip(str(missing))


def path_with(*names: str) -> str:
    """``PATH`` with the directories of these built binaries first (skips as :func:`tool`)."""
    dirs = dict.fromkeys(os.path.dirname(tool(name)) for name in names)
    return os.pathsep.join([*dirs, os.environ.get("PATH", "")])
