"""The real edge's toolchain: Kubernetes, etcd, kwok, Flux, Sealed Secrets and Gitea, from Go.

``pins.txt`` beside this file names one module version per component; ``make edge-tools``
(``python -m harness.edgetools``) builds each into ``<cache>/<component>-<version>/bin``
outside the repo (``FPLUS_EDGE_CACHE``, else ``~/.cache/fplus-edge``), skipping what is built.
Tests find a binary with :func:`binary`, which names the missing build instead of guessing.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

PINS = Path(__file__).with_name("pins.txt")
CACHE_ENV = "FPLUS_EDGE_CACHE"


class ToolMissing(LookupError):
    """A pinned binary is not built yet (``make edge-tools`` builds it)."""


@dataclass(frozen=True)
class Component:
    """One pinned Go module and the binaries built from it (binary name → package path)."""

    name: str
    module: str
    version: str
    binaries: dict[str, str]

    @property
    def home(self) -> Path:
        """The component's build directory in the cache."""
        return cache_root() / f"{self.name}-{self.version}"

    @property
    def bin_dir(self) -> Path:
        return self.home / "bin"

    def package(self, binary: str) -> str:
        """The full import path of a binary's main package."""
        rel = self.binaries[binary]
        return self.module if rel == "." else f"{self.module}/{rel}"

    @property
    def source(self) -> Path:
        """The module's source in Go's module cache (data files the tests use)."""
        return self.home / "module"

    def built(self) -> bool:
        return self.source.is_dir() and all((self.bin_dir / n).is_file() for n in self.binaries)


def cache_root() -> Path:
    """Where built components live: ``$FPLUS_EDGE_CACHE``, else ``~/.cache/fplus-edge``."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "fplus-edge"


def parse_pins(text: str) -> list[Component]:
    """Components from the pins file's text (``#`` starts a comment)."""
    components = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].split()
        if not line:
            continue
        if len(line) < 4 or any("=" not in b for b in line[3:]):
            raise ValueError(f"pins line {number}: want 'name module version bin=pkg ...'")
        binaries = dict(b.split("=", 1) for b in line[3:])
        components.append(Component(line[0], line[1], line[2], binaries))
    return components


def pins() -> list[Component]:
    """Every pinned component, in build order."""
    return parse_pins(PINS.read_text())


def component(name: str) -> Component:
    """The pinned component called ``name``."""
    for c in pins():
        if c.name == name:
            return c
    raise KeyError(f"no component {name!r} in {PINS.name}")


def binary(name: str, *, of: str | None = None) -> Path:
    """The path of a built binary: the first component that gives ``name`` (or component
    ``of``); :class:`ToolMissing` naming the build when it is not there."""
    for c in pins():
        if name in c.binaries and (of is None or c.name == of):
            path = c.bin_dir / name
            if path.is_file():
                return path
            raise ToolMissing(f"{name} ({c.name} {c.version}) is not built in {c.home}: "
                              "run `make edge-tools`")
    raise KeyError(f"no pinned component gives {name!r}" + (f" as {of!r}" if of else ""))


def available(*names: str) -> bool:
    """Whether every named binary is built."""
    try:
        for name in names:
            binary(name)
    except ToolMissing:
        return False
    return True
