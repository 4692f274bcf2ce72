"""A chart directory packed as ``helm package`` would (one top-level directory, gzip), so
``fplus chart import DIR`` sends the same archive the server checks for ``CHART.tgz``."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import yaml

from fplus.templating import untrusted_yaml


def _folder(source: Path) -> str:
    """The chart's name (its ``Chart.yaml``'s, as ``helm package`` names the folder), else the
    directory's own name (for the server to refuse, saying why)."""
    try:
        meta = untrusted_yaml.load((source / "Chart.yaml").read_bytes())
    except (OSError, yaml.YAMLError):  # a refused YAML is a YAMLError too
        return source.name
    name = meta.get("name") if isinstance(meta, dict) else None
    return name if isinstance(name, str) and name and "/" not in name else source.name


def pack_chart(source: Path) -> bytes:
    """``source`` as a ``.tgz`` under the chart's name; a top-level ``.git`` (a chart's
    checkout) is left out. Links are packed as links, for the server to refuse by name."""
    folder = _folder(source)
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as archive:
        for item in sorted(source.rglob("*")):
            relative = item.relative_to(source)
            if relative.parts[0] == ".git":
                continue
            archive.add(item, arcname=f"{folder}/{relative.as_posix()}", recursive=False)
    return out.getvalue()


def read_archive(source: Path) -> bytes:
    """What ``fplus chart import`` sends for ``source``: a directory packed, a file as it is."""
    if source.is_dir():
        return pack_chart(source.resolve())
    return source.read_bytes()
