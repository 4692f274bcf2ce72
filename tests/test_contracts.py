"""Every module and sub-package of fplus has its place in an import-linter contract (setup.cfg).

A module counts as placed when a contract names it: as a layer of a layers contract whose
container is its parent package (or by its full name in a container-less layers contract), in
a layers contract's ``exhaustive_ignores``, or in an independence contract's modules. A
forbidden contract naming it does not count: that says what it must not import, not where
it stands among its siblings. So a module added later without a contract fails here (and,
where its package's contract is exhaustive, in ``make lint`` too).
"""

from __future__ import annotations

import configparser
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "fplus"
PREFIX = "importlinter:contract:"


def _contracts() -> dict[str, configparser.SectionProxy]:
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    return {name[len(PREFIX):]: config[name] for name in config.sections()
            if name.startswith(PREFIX)}


def _lines(section: configparser.SectionProxy, key: str) -> list[str]:
    return [line.strip() for line in section.get(key, "").splitlines() if line.strip()]


def _layer_items(line: str) -> list[str]:
    """The modules of one layer line: ``a | b``, ``a : b``, optional ``(a)``."""
    return [item.strip().strip("()").strip() for item in re.split(r"[|:]", line)
            if item.strip()]


def placed_modules() -> set[str]:
    placed: set[str] = set()
    for contract in _contracts().values():
        kind = contract.get("type", "").strip()
        if kind == "layers":
            containers = _lines(contract, "containers")
            items = [item for line in _lines(contract, "layers") for item in _layer_items(line)]
            items += _lines(contract, "exhaustive_ignores")
            if containers:
                placed.update(f"{container}.{item}" for container in containers for item in items)
            else:
                placed.update(items)
        elif kind == "independence":
            placed.update(_lines(contract, "modules"))
    return placed


def package_modules() -> set[str]:
    """Every module and package under fplus/, by dotted name (fplus itself excluded)."""
    found: set[str] = set()
    for path in (ROOT / PACKAGE).rglob("*.py"):
        if "__pycache__" in path.parts:
            continue
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if len(parts) > 1:
            found.add(".".join(parts))
    return found


def test_every_module_is_in_a_contract() -> None:
    missing = sorted(package_modules() - placed_modules())
    assert not missing, (
        "modules no setup.cfg contract places (give each a layer of its package's layers "
        "contract, or a place in an independence contract):\n  " + "\n  ".join(missing))


def test_contracts_name_existing_modules() -> None:
    """A contract naming a module that no longer exists is stale (optional layers aside)."""
    existing = package_modules()
    stale = sorted(name for name in placed_modules()
                   if name.startswith(PACKAGE + ".") and name not in existing)
    assert not stale, "setup.cfg names modules that do not exist:\n  " + "\n  ".join(stale)


def test_container_layers_contracts_are_exhaustive() -> None:
    """A package's layers contract lists all its modules, so lint-imports fails on a new one."""
    lax = sorted(name for name, contract in _contracts().items()
                 if contract.get("type", "").strip() == "layers"
                 and _lines(contract, "containers")
                 and contract.get("exhaustive", "").strip().lower() != "true")
    assert not lax, "layers contracts with containers but not exhaustive: " + ", ".join(lax)


def test_architecture_lists_every_contract() -> None:
    """ARCHITECTURE.md's contracts table names each contract of setup.cfg by its id."""
    text = (ROOT / "ARCHITECTURE.md").read_text()
    unlisted = sorted(name for name in _contracts() if f"`{name}`" not in text)
    assert not unlisted, "contracts missing from ARCHITECTURE.md: " + ", ".join(unlisted)
