"""Default templates and schemas, kept as YAML data next to this module.

``load("flux-template")`` is the parsed ``flux-template.yaml``; ``names()`` lists what exists.
Files are package data (read through :mod:`importlib.resources`, so this works from a wheel
too). Each call parses afresh, so callers own (and may mutate) what they get back. This
package imports nothing of the project's.
"""

from __future__ import annotations

from importlib import resources
from typing import Any

import yaml

_SUFFIX = ".yaml"


def names() -> list[str]:
    """The names ``load`` accepts: every ``*.yaml`` file of this package, without suffix."""
    return sorted(entry.name.removesuffix(_SUFFIX)
                  for entry in resources.files(__name__).iterdir()
                  if entry.is_file() and entry.name.endswith(_SUFFIX))


def load(name: str) -> Any:
    """The parsed ``fplus/manifests/<name>.yaml``; :class:`KeyError` for any other name.

    Only names listed by :func:`names` are opened, so ``name`` can never reach outside the
    package (``"../x"`` is simply unknown).
    """
    if name not in names():
        raise KeyError(f"no manifest data named {name!r} (known: {', '.join(names())})")
    text = resources.files(__name__).joinpath(name + _SUFFIX).read_text(encoding="utf-8")
    return yaml.safe_load(text)
