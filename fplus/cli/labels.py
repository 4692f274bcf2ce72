"""Cluster labels on the command line: ``key=value`` to set, ``key-`` to remove (as kubectl
label takes them), and a cluster's labels as one line of text."""

from __future__ import annotations

import click

from fplus.kubenames.labels import is_label_key, is_label_value

SELECTOR_HELP = ("a label selector, as kubectl takes it: 'site=leeds', 'site in (a,b)', "
                 "'tier!=test', 'plc', '!legacy'")


def labels_text(labels: object) -> str:
    """``site=leeds,tier=line`` (sorted), or empty."""
    if not isinstance(labels, dict):
        return ""
    return ",".join(f"{key}={value}" for key, value in sorted(labels.items()))


def parse_label_changes(changes: tuple[str, ...]) -> dict[str, str | None]:
    """``key=value`` (set) and ``key-`` (remove) as a labels merge-patch; UsageError for
    anything else, a bad key or value, or a key named twice."""
    patch: dict[str, str | None] = {}
    for change in changes:
        if "=" in change:
            key, value = change.split("=", 1)
            if not is_label_value(value):
                raise click.UsageError(f"{change!r}: {value!r} is not a label value")
        elif change.endswith("-"):
            key, value = change[:-1], None
        else:
            raise click.UsageError(f"{change!r}: give key=value to set a label, key- to "
                                   "remove one")
        if not is_label_key(key):
            raise click.UsageError(f"{change!r}: {key!r} is not a label key")
        if key in patch:
            raise click.UsageError(f"label {key!r} is named twice")
        patch[key] = value
    return patch


def parse_labels(items: tuple[str, ...]) -> dict[str, str]:
    """``key=value`` items (``--label``) as labels; UsageError for anything else."""
    found = parse_label_changes(items)
    removed = [key for key, value in found.items() if value is None]
    if removed:
        raise click.UsageError(f"--label {removed[0]}-: give key=value (a new cluster has no "
                               "label to remove)")
    return {key: value for key, value in found.items() if value is not None}
