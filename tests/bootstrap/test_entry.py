"""The default Bootstrap script entry: its shape, the keys it consumes, and clean POSIX sh."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from fplus import manifests
from tests.bootstrap.edge import (
    bootstrap_context,
    rendered_entry,
    script,
    shellcheck,
    syntax_errors,
)
from tests.manifests.samples import CONTEXTS, placeholders, strings

# The context keys the default entry consumes (dotted paths), exactly.
CONSUMED_KEYS = frozenset({"uuid", "name", "namespace", "files", "flux.version",
                           "flux.install_url", "flux.secret", "edge_sync.credentials_secret",
                           "reach.git", "reach.config_store", "reach.registries",
                           "timeout"})
VARIANTS = {"credentials": {}, "public": {"credentials": False}}


# ---------------------------------------------------------------------------- the entry itself

def test_entry_shape() -> None:
    entry = manifests.load("bootstrap-script")
    assert set(entry) == {"files", "wrapper"}
    assert set(entry["files"]) == {"bootstrap.sh"}
    assert all(isinstance(v, str) for v in [entry["wrapper"], *entry["files"].values()])


@pytest.mark.parametrize("sample_name", [None, *sorted(CONTEXTS)])
def test_entry_satisfies_its_app_schema(sample_name: str | None) -> None:
    """The default entry as seeded, and rendered for each sample cluster."""
    entry = (manifests.load("bootstrap-script") if sample_name is None
             else rendered_entry(CONTEXTS[sample_name]))
    schema = manifests.load("schemas")["bootstrap-script"]
    assert list(Draft202012Validator(schema).iter_errors(entry)) == []


def test_entry_consumes_exactly_the_documented_context_keys() -> None:
    assert placeholders(manifests.load("bootstrap-script")) == CONSUMED_KEYS


def test_header_comment_lists_every_consumed_key() -> None:
    text = (Path(manifests.__file__).parent / "bootstrap-script.yaml").read_text(encoding="utf-8")
    header = text.split("\nwrapper:")[0]
    listed = header.split("Context keys consumed")[1].split("\n#\n")[0]
    assert set(re.findall(r"[a-z_]+(?:\.[a-z_]+)*", listed.split("\n", 1)[1])) == CONSUMED_KEYS


def test_no_defaults_that_would_hide_a_missing_key() -> None:
    found = [m for s in strings(manifests.load("bootstrap-script"))
             for m in re.findall(r"{{([^{}]*)}}", s)]
    assert found
    assert [m for m in found if ":" in m] == []


@pytest.mark.parametrize("sample_name", sorted(CONTEXTS))
def test_rendered_entry_keeps_the_files_placeholder_and_nothing_else(sample_name: str) -> None:
    sample = CONTEXTS[sample_name]
    entry = rendered_entry(sample)
    assert [line for line in entry["wrapper"].splitlines() if "@@@@@" in line] == ["@@@@@"]
    assert [s for s in strings(entry) if "{{" in s or "}}" in s] == []
    body = entry["files"]["bootstrap.sh"]
    for value in (sample["name"], sample["namespace"], bootstrap_context(sample)["flux"]["version"],
                  bootstrap_context(sample)["flux"]["install_url"]):
        assert f"'{value}'" in body


def test_the_sh_wrapper_runs_the_driver_last() -> None:
    wrapper = manifests.load("bootstrap-script")["wrapper"]
    lines = [line for line in wrapper.splitlines() if line and not line.startswith("#")]
    assert lines[0] == "set -eu"
    assert lines[-2:] == ["{{files}}", ". ./bootstrap.sh"]
    assert wrapper.startswith("#!/bin/sh\n")


# ---------------------------------------------------------------------------- clean POSIX sh

@pytest.mark.parametrize("variant", sorted(VARIANTS))
@pytest.mark.parametrize("sample_name", sorted(CONTEXTS))
def test_script_is_clean_posix_sh(sample_name: str, variant: str, tmp_path: Path) -> None:
    text = script(sample_name, **VARIANTS[variant])
    assert syntax_errors(text, tmp_path) == ""
    assert shellcheck(text, tmp_path) == ""


@pytest.mark.parametrize("sample_name", sorted(CONTEXTS))
def test_driver_is_clean_posix_sh(sample_name: str, tmp_path: Path) -> None:
    """shellcheck reads here-documents as data, so the packed driver is checked on its own."""
    driver = rendered_entry(CONTEXTS[sample_name])["files"]["bootstrap.sh"]
    assert syntax_errors(driver, tmp_path) == ""
    assert shellcheck(driver, tmp_path) == ""


def test_air_gapped_script_parses(tmp_path: Path) -> None:
    """Only the packed Flux install differs from the scripts shellchecked above (and shellcheck
    takes a second over its 468 KB of here-document)."""
    text = script(air_gapped=True)
    assert len(text) > 400_000
    assert syntax_errors(text, tmp_path) == ""


@pytest.mark.parametrize(("snippet", "code"), [
    ('[[ -n "$x" ]] && echo', "SC3010"),       # bashism
    ("echo $1\n", "SC2086"),                    # unquoted expansion
    ("local x=1\n", "SC3043"),                  # not POSIX outside bash & co
])
def test_shellcheck_does_catch_problems(snippet: str, code: str, tmp_path: Path) -> None:
    assert code in shellcheck("# shellcheck shell=sh\n" + snippet, tmp_path)
