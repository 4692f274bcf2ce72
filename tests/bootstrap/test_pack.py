"""build_script: files packed as here-documents come back byte for byte; bad input is refused."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fplus import bootstrap
from fplus.bootstrap import heredoc
from fplus.bootstrap.heredoc import MARKER_PREFIX

WRAPPER = "set -eu\n@@@@@\necho packed\n"

# Contents the shell must not touch: expansions, quotes, would-be terminators, odd endings.
CONTENTS = {
    "plain.txt": "hello\n",
    "expansions.sh": "echo $HOME ${PATH} $(id -u) $((1 + 2)) `date` \\$x\n",
    "quotes.txt": "'single' \"double\" \\ back\\slash\\\n",
    "terminators.txt": "EOF\n@@@@@\nFPLUS_EOF_\nFPLUS_EOF_AAAAAAAAAAAAAAAAAAAA\n)\n)\"\n",
    "no-newline.txt": "last line without newline",
    "no-newline-ends-in-paren": "x\n)",
    "empty": "",
    "only-newline": "\n",
    "blank-lines-at-end": "a\n\n\n",
    "crlf.txt": "dos\r\nline\r\n",
    "whitespace": "  lead\n\ttab\ntrail  \n",
    "unicode.txt": "Grüße ✓ 𝄞\n",
    "yaml.yaml": "---\na: '$b'\nc: \"`d`\"\n",
}
SHELLS = [shell for shell in ("sh", "dash", "bash", "busybox") if shutil.which(shell)]


def unpack(script: str, where: Path, shell: str = "sh") -> subprocess.CompletedProcess[str]:
    """Run ``script`` with ``shell`` in ``where`` (``busybox`` runs its own sh)."""
    (where / ".script").write_text(script, encoding="utf-8")
    command = [shell, "sh", ".script"] if shell == "busybox" else [shell, ".script"]
    return subprocess.run(command, cwd=where, capture_output=True, text=True, timeout=30,
                          check=False)


def written(where: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in where.iterdir() if p.name != ".script"}


@pytest.mark.parametrize("shell", SHELLS)
def test_round_trip_byte_for_byte(tmp_path: Path, shell: str) -> None:
    names = sorted(CONTENTS)
    half = len(names) // 2
    entry = {"files": {n: CONTENTS[n] for n in names[:half]}, "wrapper": WRAPPER}
    script = bootstrap.build_script(entry, {n: CONTENTS[n] for n in names[half:]})
    done = unpack(script, tmp_path, shell)
    assert (done.returncode, done.stderr, done.stdout) == (0, "", "packed\n")
    assert written(tmp_path) == {n: c.encode() for n, c in CONTENTS.items()}


def test_layout_as_acs(tmp_path: Path) -> None:
    script = bootstrap.build_script({"files": {"a.sh": "x\n"}, "wrapper": "#!/bin/sh\n@@@@@\n"},
                                    {"b.yaml": "y\n"}, marker="M")
    assert script == "#!/bin/sh\ncat > 'a.sh' <<'M'\nx\nM\ncat > 'b.yaml' <<'M'\ny\nM\n"


def test_entry_files_come_first_then_the_extra_ones() -> None:
    script = bootstrap.build_script({"files": {"z": "1\n", "y": "2\n"}, "wrapper": "@@@@@"},
                                    {"b": "3\n", "a": "4\n"})
    assert re.findall(r"^cat > '(\w)'", script, re.MULTILINE) == ["z", "y", "b", "a"]


def test_no_files_at_all(tmp_path: Path) -> None:
    script = bootstrap.build_script({"files": {}, "wrapper": WRAPPER}, {})
    assert script == "set -eu\n\necho packed\n"


def test_placeholder_may_be_indented(tmp_path: Path) -> None:
    wrapper = "if true; then\n  @@@@@\nfi\n"
    script = bootstrap.build_script({"files": {"f": "x"}, "wrapper": wrapper}, {})
    assert unpack(script, tmp_path).returncode == 0
    assert written(tmp_path) == {"f": b"x"}


def test_placeholder_inside_a_file_is_left_alone(tmp_path: Path) -> None:
    script = bootstrap.build_script({"files": {"f": "@@@@@\n"}, "wrapper": WRAPPER}, {})
    assert script.count("@@@@@") == 1
    assert unpack(script, tmp_path).returncode == 0
    assert written(tmp_path) == {"f": b"@@@@@\n"}


# ---------------------------------------------------------------------------- the marker

def test_random_marker_as_acs_with_a_prefix() -> None:
    found = {re.search(r"<<'(\S+)'", bootstrap.build_script(
        {"files": {"f": "x\n"}, "wrapper": "@@@@@"}, {}))[1] for _ in range(20)}
    assert len(found) == 20
    for marker in found:
        assert re.fullmatch(rf"{MARKER_PREFIX}[A-Za-z0-9_-]{{20}}", marker), marker


def test_a_colliding_random_marker_is_drawn_again(monkeypatch: pytest.MonkeyPatch) -> None:
    drawn: Iterator[str] = iter(["FPLUS_EOF_taken", "FPLUS_EOF_free"])
    monkeypatch.setattr(heredoc, "new_marker", lambda: next(drawn))
    script = bootstrap.build_script({"files": {"f": "a\nFPLUS_EOF_taken\n"},
                                     "wrapper": "@@@@@"}, {})
    assert "<<'FPLUS_EOF_free'" in script
    assert "<<'FPLUS_EOF_taken'" not in script


def test_a_given_marker_that_collides_is_refused() -> None:
    with pytest.raises(bootstrap.BootstrapError, match="'END' occurs as a line"):
        bootstrap.build_script({"files": {}, "wrapper": "@@@@@"}, {"f": "a\nEND\nb"},
                               marker="END")


def test_a_given_marker_may_occur_inside_a_line(tmp_path: Path) -> None:
    content = " END\nEND \nxEND\n\tEND\nEND\r\n"
    script = bootstrap.build_script({"files": {}, "wrapper": "@@@@@"}, {"f": content},
                                    marker="END")
    assert unpack(script, tmp_path).returncode == 0
    assert written(tmp_path) == {"f": content.encode()}


@pytest.mark.parametrize("marker", ["", "A B", "'M'", "M'", "1M", "$M", "M\n", "-M", 7])
def test_a_given_marker_must_be_a_plain_word(marker: Any) -> None:
    with pytest.raises(bootstrap.BootstrapError, match="not a plain word"):
        bootstrap.build_script({"files": {}, "wrapper": "@@@@@"}, {"f": "x"}, marker=marker)


# ---------------------------------------------------------------------------- refused input

GOOD_NAMES = ["bootstrap.sh", "self-link.yaml", "A_b-9.x", "0", "x" * 255]
BAD_NAMES = ["", ".hidden", "..", ".", "a..b", "a/b", "../x", "/abs", "a b", "a'b", "-x", "_x",
             "x\n", "é.txt", "a\\b", "$x", "x" * 256, 1, None]


@pytest.mark.parametrize("name", GOOD_NAMES)
def test_plain_names_are_accepted(name: str) -> None:
    assert f"cat > '{name}'" in bootstrap.build_script({"files": {name: "x\n"},
                                                        "wrapper": "@@@@@"}, {})


@pytest.mark.parametrize("where", ["entry", "extra"])
@pytest.mark.parametrize("name", BAD_NAMES, ids=repr)
def test_other_names_are_refused(name: Any, where: str) -> None:
    files = {name: "x\n"}
    entry = {"files": files if where == "entry" else {}, "wrapper": "@@@@@"}
    with pytest.raises(bootstrap.BootstrapError, match="is not a plain name"):
        bootstrap.build_script(entry, files if where == "extra" else {})


def test_a_name_in_both_is_a_clash_not_an_override() -> None:
    with pytest.raises(bootstrap.BootstrapError, match=r"self-link\.yaml both in the entry"):
        bootstrap.build_script({"files": {"self-link.yaml": "a", "x": "b"}, "wrapper": "@@@@@"},
                               {"self-link.yaml": "c"})


@pytest.mark.parametrize(("entry", "files", "problem"), [
    ("text", {}, "the entry must be a mapping"),
    (None, {}, "the entry must be a mapping"),
    ({"wrapper": "@@@@@"}, {}, "must have both 'files' and 'wrapper'"),
    ({"files": {}}, {}, "must have both 'files' and 'wrapper'"),
    ({"files": {}, "wrapper": None}, {}, "the wrapper must be text, not NoneType"),
    ({"files": {}, "wrapper": ["@@@@@"]}, {}, "the wrapper must be text, not list"),
    ({"files": {}, "wrapper": "#!/bin/sh\n"}, {}, "no @@@@@ placeholder"),
    ({"files": {}, "wrapper": "{{files}}"}, {}, "no @@@@@ placeholder"),
    ({"files": {}, "wrapper": "@@@@@\n@@@@@\n"}, {}, "exactly one @@@@@ placeholder"),
    ({"files": {}, "wrapper": "@@@@@@\n"}, {}, "exactly one @@@@@ placeholder"),
    ({"files": {}, "wrapper": "cd /tmp; @@@@@\n"}, {}, "alone on its line"),
    ({"files": {}, "wrapper": "@@@@@ # files\n"}, {}, "alone on its line"),
    ({"files": ["a"], "wrapper": "@@@@@"}, {}, "entry's files must be a mapping .* not list"),
    ({"files": "a", "wrapper": "@@@@@"}, {}, "entry's files must be a mapping"),
    ({"files": {}, "wrapper": "@@@@@"}, [("a", "b")], "extra files must be a mapping"),
    ({"files": {"a": b"x"}, "wrapper": "@@@@@"}, {}, "a must be text, not bytes"),
    ({"files": {"a": None}, "wrapper": "@@@@@"}, {}, "a must be text, not NoneType"),
    ({"files": {}, "wrapper": "@@@@@"}, {"a": 1}, "a must be text, not int"),
    ({"files": {}, "wrapper": "@@@@@"}, {"a": "x\0y"}, "a contains a NUL byte"),
])
def test_refused(entry: Any, files: Any, problem: str) -> None:
    with pytest.raises(bootstrap.BootstrapError, match=problem):
        bootstrap.build_script(entry, files)


def test_the_error_is_a_value_error() -> None:
    assert issubclass(bootstrap.BootstrapError, ValueError)


def test_a_prepared_script_packs_as_build_script_and_checks_added_names_first() -> None:
    entry = {"wrapper": "#!/bin/sh\n@@@@@\n. ./a.sh\n", "files": {"a.sh": "echo a\n"}}
    prepared = bootstrap.prepare_script(entry, {"b.yaml": "b: 1\n"})
    assert prepared.with_files({"c.yaml": "c\n"}).text("EOF_X") == \
        bootstrap.build_script(entry, {"b.yaml": "b: 1\n", "c.yaml": "c\n"}, marker="EOF_X")
    for clash in ({"a.sh": "x"}, {"b.yaml": "x"}):  # nothing is packed before this refusal
        with pytest.raises(bootstrap.BootstrapError, match="both in the entry and added"):
            prepared.with_files(clash)
    with pytest.raises(bootstrap.BootstrapError, match="plain name"):
        prepared.with_files({"../x": "x"})


@pytest.mark.parametrize("content", [
    "M", "M\n", "\nM", "x\nM\ny", "xM\n", "Mx", "x\nMM\n", "x\nM\r\n", "", "\n", "\n\n",
    "M\nM", "a\nb\nM", "M\n\n", " M", "x\nM",
])
def test_collides_finds_the_marker_as_a_whole_line_exactly_as_splitting_would(
        content: str) -> None:
    assert heredoc.collides("M", [content]) == ("M" in content.split("\n"))
    assert heredoc.collides("M", ["other", content]) == ("M" in content.split("\n"))
