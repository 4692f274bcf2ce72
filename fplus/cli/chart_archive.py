"""A chart directory packed as ``helm package`` would (one top-level directory, gzip), so
``fplus chart import DIR`` sends the same archive the server checks for ``CHART.tgz``."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path


def pack_chart(source: Path) -> bytes:
    """``source`` as a ``.tgz`` under its own directory name; a top-level ``.git`` (a chart's
    checkout) is left out. Links are packed as links, for the server to refuse by name."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as archive:
        for item in sorted(source.rglob("*")):
            relative = item.relative_to(source)
            if relative.parts[0] == ".git":
                continue
            archive.add(item, arcname=f"{source.name}/{relative.as_posix()}", recursive=False)
    return out.getvalue()


def read_archive(source: Path) -> bytes:
    """What ``fplus chart import`` sends for ``source``: a directory packed, a file as it is."""
    if source.is_dir():
        return pack_chart(source.resolve())
    return source.read_bytes()
