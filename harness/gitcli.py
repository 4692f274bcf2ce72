"""Running the real git CLI, isolated from the user's and the system's git config."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

GIT_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_AUTHOR_NAME": "Someone Else",
    "GIT_AUTHOR_EMAIL": "someone@example.com",
    "GIT_COMMITTER_NAME": "Someone Else",
    "GIT_COMMITTER_EMAIL": "someone@example.com",
}


def git(*args: str | Path, cwd: Path | None = None, check: bool = True) -> str:
    """Run ``git args…`` and return its stdout (raises with stderr on failure if ``check``)."""
    proc = subprocess.run(["git", "-c", "init.defaultBranch=main", *map(str, args)], cwd=cwd,
                          env=os.environ | GIT_ENV, capture_output=True, text=True, check=False)
    if check and proc.returncode != 0:
        raise AssertionError(f"git {' '.join(map(str, args))} failed:\n{proc.stderr}")
    return proc.stdout


def bare(repo: Path, *args: str | Path, check: bool = True) -> str:
    """Run git against the bare repository ``repo``."""
    return git("--git-dir", repo, *args, check=check)


def files_at(repo: Path, ref: str = "main") -> list[str]:
    """All file paths in ``ref``'s tree."""
    return bare(repo, "ls-tree", "-r", "--name-only", ref).split()


def fsck_clean(repo: Path) -> None:
    """Assert ``git fsck --strict`` finds nothing wrong (dangling objects are fine)."""
    proc = subprocess.run(["git", "--git-dir", str(repo), "fsck", "--strict", "--no-dangling"],
                          env=os.environ | GIT_ENV, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    bad = [line for line in (proc.stdout + proc.stderr).splitlines()
           if any(word in line for word in ("error", "missing", "broken", "corrupt"))]
    assert not bad, bad


def push_from_clone(url: str, work: Path, path: str, content: str, branch: str = "main") -> str:
    """Clone ``url``, commit one file, push; return the pushed commit id."""
    git("clone", "-q", url, work)
    (work / path).parent.mkdir(parents=True, exist_ok=True)
    (work / path).write_text(content)
    git("add", path, cwd=work)
    git("commit", "-q", "-m", f"external {path}", cwd=work)
    git("push", "-q", "origin", f"HEAD:refs/heads/{branch}", cwd=work)
    return git("rev-parse", "HEAD", cwd=work).strip()
