"""The central repos' imports, as an operator makes them: a ``helm package``-shaped chart
archive (:func:`chart_archive`) posted to ``POST /v1/chart`` (:func:`import_chart`), so a
test's charts exist where the Cluster Manager checks for them."""

from __future__ import annotations

import io
import tarfile

from harness.servers import Api

GZIP = {"Content-Type": "application/gzip"}


def chart_archive(name: str, version: str = "0.1.0",
                  extra: dict[str, bytes] | None = None) -> bytes:
    """A ``helm package``-shaped archive: ``<name>/Chart.yaml`` and a template."""
    files = {"Chart.yaml": f"apiVersion: v2\nname: {name}\nversion: {version}\n".encode(),
             "templates/cm.yaml": b"apiVersion: v1\nkind: ConfigMap\n", **(extra or {})}
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as archive:
        for path, data in files.items():
            member = tarfile.TarInfo(f"{name}/{path}")
            member.size = len(data)
            archive.addfile(member, io.BytesIO(data))
    return out.getvalue()


def import_chart(manager: Api, name: str, version: str = "0.1.0",
                 extra: dict[str, bytes] | None = None) -> None:
    """Import chart ``name`` into the shared charts repo through the Cluster Manager's API
    (``manager`` holding the Imports permission, or root)."""
    r = manager.post("/v1/chart", data=chart_archive(name, version, extra), headers=GZIP)
    assert r.status_code in (200, 201), r.text
