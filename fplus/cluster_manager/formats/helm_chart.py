"""Helm charts for the shared charts repo: read from a ``helm package`` archive or a chart
directory, checked, and laid out as ``<chart name>/…`` files (pure functions, no Git).

Only regular files are taken; an archive member that is a link or a device, an absolute path
or one with ``..``, a path with a ``.git`` segment or a ``.gitmodules`` file (Git's own
files, never a chart's), a path the archive holds twice, a missing or malformed
``Chart.yaml`` (in an archive, also one whose ``name`` is not its folder's), more than
:data:`MAX_FILES` files and directories or more than :data:`MAX_BYTES` of files is refused
with :class:`ChartError`, before anything is written anywhere. The limits are checked as the
input is walked, so an archive of 200,000 empty files is refused at its 5,001st entry; an
archive's raw headers are walked first (:mod:`.tar_scan`), so a long name or pax header
declaring more than :data:`~.tar_scan.MAX_HEADER_BYTES` is refused before any of it is read.
"""

from __future__ import annotations

import io
import re
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import yaml

from fplus.templating import untrusted_yaml

from .tar_scan import TarRefused, scan_tar

MAX_BYTES = 20 * 1024 * 1024
"""The most a chart's files may add up to (and a chart archive may be)."""
MAX_FILES = 5000
"""The most files and directories a chart may hold (every edge pulls them all)."""
GIT_NAMES = (".git", ".gitmodules")
CHART_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
SETTINGS = {"members": "helm_chart.MAX_FILES", "bytes": "helm_chart.MAX_BYTES",
            "header": "tar_scan.MAX_HEADER_BYTES"}
"""The setting behind each limit :func:`~.tar_scan.scan_tar` names."""


class ChartError(ValueError):
    """Not a chart we import; the message says why."""


@dataclass(frozen=True)
class Chart:
    """A chart's name, version and files (paths relative to the chart's own directory)."""

    name: str
    version: str
    files: dict[str, bytes]

    def repo_files(self) -> dict[str, bytes]:
        """The files as they go into the charts repo: under ``<name>/``."""
        return {f"{self.name}/{path}": data for path, data in self.files.items()}


def read_chart(path: Path) -> Chart:
    """The chart in ``path``: a directory holding ``Chart.yaml``, or a ``.tgz`` archive
    whose one top-level directory holds it."""
    if path.is_dir():
        return _checked(_directory_files(path), str(path))
    if path.is_file():
        if path.stat().st_size > MAX_BYTES:
            raise ChartError(f"{path}: the archive alone exceeds {MAX_BYTES} bytes "
                             "(cluster_manager.formats.helm_chart.MAX_BYTES)")
        return read_chart_archive(path.read_bytes(), str(path))
    raise ChartError(f"{path}: no such file or directory")


def read_chart_archive(data: bytes, where: str = "the archive") -> Chart:
    """The chart in the ``.tgz`` archive ``data`` (a file's, or a request body's)."""
    if len(data) > MAX_BYTES:
        raise ChartError(f"{where}: the archive alone exceeds {MAX_BYTES} bytes "
                         "(cluster_manager.formats.helm_chart.MAX_BYTES)")
    top, files = _archive_files(data, where)
    return _in_folder(_checked(files, where), top, where)


def _in_folder(chart: Chart, folder: str, where: str) -> Chart:
    """``chart`` if its ``Chart.yaml`` names it as its folder is named."""
    if chart.name != folder:
        raise ChartError(f"{where}: Chart.yaml names chart {chart.name!r} but its folder is "
                         f"{folder!r} (`helm package` makes them the same)")
    return chart


def _directory_files(root: Path) -> dict[str, bytes]:
    """The files under ``root`` (a top-level ``.git`` directory, a chart's checkout, is
    skipped)."""
    files: dict[str, bytes] = {}
    limits = _Limits()
    for item in root.rglob("*"):
        relative = item.relative_to(root).as_posix()
        if relative.split("/")[0] == ".git":
            continue
        limits.entry(relative)
        if item.is_symlink():
            raise ChartError(f"{relative} is a symbolic link: a chart holds regular files only")
        if item.is_dir():
            continue
        if not item.is_file():
            raise ChartError(f"{relative} is not a regular file")
        limits.add(item.stat().st_size)
        files[relative] = item.read_bytes()
    return dict(sorted(files.items()))


class _Limits:
    """Counts a chart's entries and bytes as they are walked; ChartError past a limit."""

    def __init__(self) -> None:
        self.entries = self.total = 0

    def entry(self, path: str) -> None:
        """One more file or directory at ``path`` (Git's own names refused)."""
        self.entries += 1
        if self.entries > MAX_FILES:
            raise ChartError(f"the chart holds more than {MAX_FILES} files and directories "
                             "(cluster_manager.formats.helm_chart.MAX_FILES)")
        if any(part.lower().rstrip(". ") in GIT_NAMES for part in path.split("/")):
            raise ChartError(f"{path} is one of Git's own files (.git, .gitmodules), never "
                             "part of a chart")

    def add(self, size: int) -> None:
        self.total += size
        if self.total > MAX_BYTES:
            raise ChartError(f"the chart's files exceed {MAX_BYTES} bytes "
                             "(cluster_manager.formats.helm_chart.MAX_BYTES)")


def _archive_files(data: bytes, where: str) -> tuple[str, dict[str, bytes]]:
    """The archive's one top-level directory and the files under it (paths within it)."""
    try:
        scan_tar(data, MAX_FILES, MAX_BYTES)
    except TarRefused as exc:
        setting = SETTINGS.get(exc.limit)
        named = f" (cluster_manager.formats.{setting})" if setting else ""
        raise ChartError(f"{where}: {exc}{named}") from None
    try:
        archive = tarfile.open(fileobj=io.BytesIO(data), mode="r:*")  # noqa: SIM115
    except (tarfile.TarError, EOFError) as exc:
        raise ChartError(f"{where} is neither a chart directory nor a chart archive "
                         f"(.tgz): {exc}") from None
    files: dict[str, bytes] = {}
    limits = _Limits()
    seen: set[str] = set()
    with archive:
        for member in _members(archive, where):
            name = PurePosixPath(member.name)
            if name.is_absolute() or ".." in name.parts:
                raise ChartError(f"archive member {member.name!r} leaves the chart directory")
            if name.as_posix() in seen:
                raise ChartError(f"archive member {name.as_posix()!r} is in the archive twice "
                                 "(which one would be the chart's?)")
            seen.add(name.as_posix())
            limits.entry(name.as_posix())
            if member.isdir():
                continue
            if not member.isfile():
                raise ChartError(f"archive member {member.name!r} is not a regular file")
            limits.add(member.size)
            extracted = archive.extractfile(member)
            files[name.as_posix()] = extracted.read() if extracted else b""
    tops = {path.split("/")[0] for path in files}
    if len(tops) != 1 or not all("/" in path for path in files):
        raise ChartError(f"{where}: a chart archive holds one directory (as `helm package` "
                         "makes it)")
    top = tops.pop()
    return top, {path[len(top) + 1:]: content for path, content in files.items()}


def _members(archive: tarfile.TarFile, where: str) -> Iterator[tarfile.TarInfo]:
    """The archive's members one at a time (never all headers at once)."""
    try:
        yield from archive
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise ChartError(f"{where}: the archive is damaged: {exc}") from None


def read_chart_files(files: dict[str, bytes], where: str) -> Chart:
    """The chart of ``files`` (paths within the chart), its ``Chart.yaml`` checked."""
    return _checked(files, where)


def _checked(files: dict[str, bytes], where: str) -> Chart:
    if "Chart.yaml" not in files:
        raise ChartError(f"{where}: no Chart.yaml at the top of the chart")
    try:
        meta = untrusted_yaml.load(files["Chart.yaml"])
    except untrusted_yaml.YAMLRefused as exc:
        raise ChartError(f"{where}: Chart.yaml refused: {exc}") from None
    except yaml.YAMLError as exc:
        raise ChartError(f"{where}: Chart.yaml is not YAML: {exc}") from None
    if not isinstance(meta, dict):
        raise ChartError(f"{where}: Chart.yaml must be a mapping")
    name, version = meta.get("name"), meta.get("version")
    if meta.get("apiVersion") not in ("v1", "v2"):
        raise ChartError(f"{where}: Chart.yaml apiVersion must be v1 or v2")
    if not isinstance(name, str) or not CHART_NAME.match(name) or len(name) > 63:
        raise ChartError(f"{where}: Chart.yaml name must be lower-case letters, digits and "
                         f"'-' (it names the chart's directory), not {name!r}")
    if not isinstance(version, str | int | float) or not str(version):
        raise ChartError(f"{where}: Chart.yaml has no version")
    return Chart(name, str(version), files)
