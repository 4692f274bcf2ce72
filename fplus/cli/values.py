"""Helm values given on the command line: a YAML or JSON file (or ``-``, standard input) that
must hold a mapping, loaded as untrusted YAML."""

from __future__ import annotations

import sys
from pathlib import Path

import click
import yaml

from fplus.jsontypes import is_object
from fplus.templating import untrusted_yaml


def read_values(source: str | None) -> dict[str, object] | None:
    """The mapping in file ``source`` (``-``: standard input); None when not given."""
    if source is None:
        return None
    try:
        text = sys.stdin.read() if source == "-" else Path(source).read_text(encoding="utf-8")
        values: object = untrusted_yaml.load(text)
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise click.BadParameter(f"{source}: {exc}", param_hint="--values") from None
    if not is_object(values):
        raise click.BadParameter(f"{source} must hold a mapping", param_hint="--values")
    return values
