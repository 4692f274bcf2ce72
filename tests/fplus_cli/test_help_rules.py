"""Every ``fplus`` command's ``--help``, walked through click's command tree so a command
added later is held to the same rules: an option naming a cluster, chart template, fleet
deployment, rollout or window takes NAME|UUID; every ``-l/--selector`` is a label selector
string (never KEY=VALUE only, never a file); a file is ``-f/--file`` unless it is one of the
documented exceptions (docs/cli.md: ``-o/--output FILE`` only where the command prints a file
rather than a table, as ``cluster kubeconfig``); no help says "null"."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import click
import pytest

from fplus.cli.main import cli

ROOT = Path(__file__).resolve().parents[2]
NAMED = re.compile(r"cluster|chart|fleet|rollout|window")
FILE_EXCEPTIONS = {"--values", "--override", "--template", "--rollout", "--script", "--from-file",
                   "--ca-file", "--output"}
"""Files given by what they hold (as kubectl's --from-file), listed in docs/cli.md."""


def commands(group: click.Command = cli, path: str = "fplus"
             ) -> Iterator[tuple[str, click.Command]]:
    yield path, group
    if isinstance(group, click.Group):
        for name, command in sorted(group.commands.items()):
            yield from commands(command, f"{path} {name}")


ALL = list(commands())


def _is_file(param: click.Parameter) -> bool:
    return isinstance(param.type, click.Path) or "FILE" in (param.metavar or "")


def _help(path: str, command: click.Command) -> str:
    ctx = click.Context(command, info_name=path, terminal_width=80, max_content_width=80)
    return command.get_help(ctx)


def test_the_walk_finds_every_command() -> None:
    paths = {path for path, _ in ALL}
    assert {"fplus logout", "fplus cluster describe", "fplus fleet create",
            "fplus rollout pause"} <= paths


@pytest.mark.parametrize(("path", "command"), ALL, ids=[path for path, _ in ALL])
def test_help_follows_the_vocabulary(path: str, command: click.Command) -> None:
    text = _help(path, command)
    assert not re.search(r"\bnull\b", text, re.IGNORECASE), text
    for param in command.params:
        opts = getattr(param, "opts", [])
        if isinstance(param, click.Option) and (param.is_flag or param.count):
            continue
        if _is_file(param):
            if isinstance(param, click.Option):
                assert opts == ["-f", "--file"] or set(opts) & FILE_EXCEPTIONS, (path, opts)
            continue
        if "-l" in opts or "--selector" in opts:
            assert param.metavar == "SELECTOR" and "selector" in (param.help or ""), (
                path, opts)
            assert "-l" in opts and "--selector" in opts, (path, opts)
            continue
        if NAMED.search(param.name or ""):
            if isinstance(param, click.Option):
                assert "NAME|UUID" in (param.metavar or ""), (path, opts, param.metavar)
            else:
                assert ("NAME|UUID" in (param.metavar or "")
                        or "name or UUID" in (command.help or "")), (path, param.name)


def test_the_file_exceptions_are_documented() -> None:
    doc = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    for option in FILE_EXCEPTIONS:
        assert f"`{option}" in doc, option
