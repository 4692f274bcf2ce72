"""Reading a chart to import: a directory or a ``helm package`` archive, and every way one is
refused before anything is written."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from fplus.cluster_manager import charts
from fplus.cluster_manager.charts import ChartError, read_chart

CHART_YAML = b"apiVersion: v2\nname: edge-cluster\nversion: 1.2.3\n"


def _tgz(path: Path, members: dict[str, bytes | str]) -> Path:
    """An archive of ``members`` (bytes: a file; a str: a symbolic link to it)."""
    with tarfile.open(path, "w:gz") as archive:
        for name, content in members.items():
            info = tarfile.TarInfo(name)
            if isinstance(content, str):
                info.type, info.linkname = tarfile.SYMTYPE, content
                archive.addfile(info)
            else:
                info.size = len(content)
                archive.addfile(info, io.BytesIO(content))
    return path


def test_a_packaged_chart(tmp_path: Path) -> None:
    chart = read_chart(_tgz(tmp_path / "c.tgz", {
        "edge-cluster/Chart.yaml": CHART_YAML, "edge-cluster/values.yaml": b"a: 1\n",
        "edge-cluster/templates/cm.yaml": b"kind: ConfigMap\n"}))
    assert (chart.name, chart.version) == ("edge-cluster", "1.2.3")
    assert chart.repo_files() == {"edge-cluster/Chart.yaml": CHART_YAML,
                                  "edge-cluster/values.yaml": b"a: 1\n",
                                  "edge-cluster/templates/cm.yaml": b"kind: ConfigMap\n"}


def test_a_chart_directory(tmp_path: Path) -> None:
    (tmp_path / "templates").mkdir()
    (tmp_path / "Chart.yaml").write_bytes(CHART_YAML)
    (tmp_path / "templates" / "cm.yaml").write_bytes(b"kind: ConfigMap\n")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "HEAD").write_bytes(b"ref: refs/heads/main\n")
    chart = read_chart(tmp_path)
    assert sorted(chart.files) == ["Chart.yaml", "templates/cm.yaml"]


REFUSED_ARCHIVES = {
    "no Chart.yaml": ({"c/values.yaml": b""}, "no Chart.yaml"),
    "two top directories": ({"a/Chart.yaml": CHART_YAML, "b/x": b""}, "one directory"),
    "files at the top": ({"Chart.yaml": CHART_YAML}, "one directory"),
    "parent path": ({"c/Chart.yaml": CHART_YAML, "c/../../etc/x": b""}, "leaves the chart"),
    "absolute path": ({"/c/Chart.yaml": CHART_YAML}, "leaves the chart"),
    "symbolic link": ({"c/Chart.yaml": CHART_YAML, "c/x": "/etc/passwd"},
                      "not a regular file"),
    "bad name": ({"c/Chart.yaml": b"apiVersion: v2\nname: Edge_Cluster\nversion: 1\n"},
                 "name must be"),
    "old apiVersion": ({"c/Chart.yaml": b"apiVersion: v3\nname: c\nversion: 1\n"},
                       "apiVersion"),
    "no version": ({"c/Chart.yaml": b"apiVersion: v2\nname: c\n"}, "no version"),
    "not YAML": ({"c/Chart.yaml": b"a: [\n"}, "not YAML"),
    "not a mapping": ({"c/Chart.yaml": b"- a\n"}, "mapping"),
}


@pytest.mark.parametrize(("members", "problem"), REFUSED_ARCHIVES.values(),
                         ids=REFUSED_ARCHIVES)
def test_refused_archives(tmp_path: Path, members: dict[str, bytes | str],
                          problem: str) -> None:
    with pytest.raises(ChartError, match=problem):
        read_chart(_tgz(tmp_path / "c.tgz", members))


def test_refused_inputs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "notes.txt").write_text("not a chart")
    with pytest.raises(ChartError, match="neither a chart directory nor a chart archive"):
        read_chart(tmp_path / "notes.txt")
    with pytest.raises(ChartError, match="no such file"):
        read_chart(tmp_path / "missing.tgz")
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / "Chart.yaml").write_bytes(CHART_YAML)
    (linked / "secret").symlink_to("/etc/hostname")
    with pytest.raises(ChartError, match="symbolic link"):
        read_chart(linked)
    monkeypatch.setattr(charts, "MAX_BYTES", 100)
    big = _tgz(tmp_path / "big.tgz", {"c/Chart.yaml": CHART_YAML, "c/blob": b"x" * 200})
    with pytest.raises(ChartError, match="exceed"):
        read_chart(big)
