"""Rules of the house that a move or a new module could quietly break: one name per module in
the Cluster Manager, gevent's patching in the entry points only, and the packages held to
mypy's strict flags named where a reader looks (ARCHITECTURE.md)."""

from __future__ import annotations

import configparser
import re
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED_NAMES = {"__init__.py", "errors.py"}
"""Module names that may stand in several packages: each package's own errors."""
STRICT_FLAGS = ("disallow_any_generics", "disallow_subclassing_any", "disallow_untyped_calls",
                "disallow_untyped_defs", "disallow_untyped_decorators", "warn_return_any",
                "no_implicit_reexport", "extra_checks")
"""What ``--strict`` adds to the repo's global mypy settings (which has the rest of it)."""


def test_no_module_name_repeats_inside_the_cluster_manager() -> None:
    names = Counter(p.name for p in (ROOT / "fplus" / "cluster_manager").rglob("*.py")
                    if "__pycache__" not in p.parts)
    repeated = sorted(name for name, count in names.items()
                      if count > 1 and name not in SHARED_NAMES)
    assert not repeated, f"module names used twice in fplus/cluster_manager: {repeated}"


def test_no_module_needs_an_import_after_code() -> None:
    """gevent patches in the entry points (each service's ``cli.py`` launcher), so no module
    imports after code to come after it."""
    offenders = [str(p.relative_to(ROOT)) for p in (ROOT / "fplus").rglob("*.py")
                 if "noqa: E402" in p.read_text(encoding="utf-8")]
    assert not offenders, offenders


def strict_packages() -> set[str]:
    """The module patterns of setup.cfg's mypy sections that set every strict flag."""
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    found: set[str] = set()
    for section in config.sections():
        if section.startswith("mypy-") and all(
                config[section].getboolean(flag, fallback=False) for flag in STRICT_FLAGS):
            found.update(p.strip() for p in section[len("mypy-"):].split(","))
    return found


def test_the_strict_packages_are_the_ones_architecture_names() -> None:
    text = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")
    match = re.search(r"<!-- strict:start -->(.*?)<!-- strict:end -->", text, flags=re.S)
    assert match, "ARCHITECTURE.md lacks its list of strict packages"
    named = set(re.findall(r"`([\w.*]+)`", match[1]))
    assert named == strict_packages()
    for pattern in named:  # each names a module or package that exists
        path = ROOT / Path(*pattern.removesuffix(".*").split("."))
        assert path.is_dir() or path.with_suffix(".py").is_file(), pattern
