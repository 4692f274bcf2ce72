"""``import-chart`` with what no chart holds: a flood of files, Git's own files, a huge size.

The probe imported 200,001 empty files into the charts repo every edge pulls (21 s, 212 MB
of memory), and a chart with a ``.git/`` member or a ``.gitmodules`` file ended in a
traceback. Each is now refused in one line, and the charts repo does not move.
"""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from fplus.cluster_manager.formats.helm_chart import MAX_BYTES
from harness.gitcli import bare
from harness.stack import Stack, wait_for
from tests.cluster_manager.test_central_repos import CHARTS, _charts_head, _import

CHART_YAML = b"apiVersion: v2\nname: flood\nversion: 1.0.0\n"
MAX_FILES = 5000  # formats.helm_chart.MAX_FILES (written out: the old code has none)


@pytest.fixture(scope="module")
def stack(shared_stack: Stack) -> Stack:
    """The session's stack, once its charts repo has a first commit (refused imports must
    leave the charts repo as it was; nothing here counts what others imported)."""
    wait_for(lambda: bare(shared_stack.repos / f"{CHARTS}.git", "rev-parse", "--verify", "-q",
                          "main", check=False), what="the charts repo's first commit")
    return shared_stack


def _tgz(path: Path, members: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w:gz") as archive:
        for name, content in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(content)
            archive.addfile(info, io.BytesIO(content))
    return path


def _refused(stack: Stack, source: Path, reason: str) -> None:
    head = _charts_head(stack)
    done = _import(stack, source, "--git-repos", str(stack.repos))
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert reason in done.stderr and "nothing was imported" in done.stderr, done.stderr
    assert _charts_head(stack) == head


def test_a_flood_of_empty_files(stack: Stack, tmp_path: Path) -> None:
    members = {"flood/Chart.yaml": CHART_YAML}
    members |= {f"flood/templates/f{i}.yaml": b"" for i in range(MAX_FILES + 1)}
    _refused(stack, _tgz(tmp_path / "flood.tgz", members), f"more than {MAX_FILES} files")
    directory = tmp_path / "flood"
    (directory / "templates").mkdir(parents=True)
    (directory / "Chart.yaml").write_bytes(CHART_YAML)
    for i in range(MAX_FILES + 1):
        (directory / "templates" / f"f{i}.yaml").touch()
    _refused(stack, directory, f"more than {MAX_FILES} files")


@pytest.mark.parametrize("member", ["c/.git/config", "c/templates/.git/HEAD", "c/.gitmodules",
                                    "c/sub/.GIT/x", "c/.gitmodules."])
def test_git_files_in_an_archive(stack: Stack, tmp_path: Path, member: str) -> None:
    archive = _tgz(tmp_path / "c.tgz", {"c/Chart.yaml": CHART_YAML.replace(b"flood", b"c"),
                                        member: b"[core]\n"})
    _refused(stack, archive, "Git's own files")


def test_git_files_in_a_directory(stack: Stack, tmp_path: Path) -> None:
    chart = tmp_path / "c"
    (chart / "templates" / ".git").mkdir(parents=True)
    (chart / "Chart.yaml").write_bytes(CHART_YAML.replace(b"flood", b"c"))
    (chart / "templates" / ".git" / "HEAD").write_bytes(b"ref: refs/heads/main\n")
    _refused(stack, chart, "Git's own files")
    (chart / "templates" / ".git" / "HEAD").unlink()
    (chart / "templates" / ".git").rmdir()
    (chart / ".gitmodules").write_bytes(b'[submodule "x"]\n\tpath = x\n\turl = ../x\n')
    _refused(stack, chart, "Git's own files")


def test_an_archive_over_the_size_limit(stack: Stack, tmp_path: Path) -> None:
    big = tmp_path / "big.tgz"
    with big.open("wb") as out:
        out.truncate(MAX_BYTES + 1)
    _refused(stack, big, "MAX_BYTES")
