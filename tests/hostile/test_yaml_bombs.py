"""YAML alias bombs ("billion laughs") wherever a user hands the services YAML: the console's
new-cluster form, ``fplus cluster create --values``, ``import-chart`` and ``import-flux``.

The probe's 377 bytes cost the Cluster Manager worker 8 s and +250 MB before a 503. Each is
refused before it is built, with a message naming the reason, and nothing is written.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from harness.servers import ADMIN_PASSWORD, run_command
from harness.stack import Stack
from tests.console.conftest import cluster_names, console_session
from tests.shared_files import FLUX_INSTALL, need

FPLUS = str(Path(sys.executable).parent / "fplus")


def bomb(levels: int = 7) -> str:
    """Nested aliases: ``levels`` lines, each alias list nine times the one before."""
    lines = ["l0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"l{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def stack(shared_stack: Stack) -> Stack:
    """The session's stack: these tests only add and look at objects of their own."""
    return shared_stack


def test_the_console_form_refuses_an_alias_bomb_with_422(stack: Stack) -> None:
    assert len(bomb()) < 400  # the probe's size
    session, page = console_session(stack)
    csrf = re.search(r'name="csrf" value="([0-9a-f]{64})"', page)
    assert csrf
    worker = stack.manager.worker_pid()
    r = session.post(f"{stack.manager.url}/ui/new", timeout=30, data={
        "csrf": csrf.group(1), "name": "bomb-edge", "namespace": "fplus-edge",
        "values": bomb()})
    assert r.status_code == 422, r.status_code
    assert "alias bomb" in r.text
    assert "bomb-edge" not in cluster_names(stack)
    assert stack.manager.worker_pid() == worker  # the same worker, alive

    # aliases that stay small (a merge key, one reuse) are still plain YAML
    r = session.post(f"{stack.manager.url}/ui/new", timeout=30, allow_redirects=False, data={
        "csrf": csrf.group(1), "name": "merge-edge", "namespace": "fplus-edge",
        "values": "base: &b {replicas: 1}\nweb:\n  <<: *b\n  port: 80\n"})
    assert r.status_code == 303, r.text[:500]
    assert "merge-edge" in cluster_names(stack)


def test_fplus_refuses_a_values_file_bomb_in_one_line(stack: Stack, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("FPLUS_") and k != "CONFIG_STORE_URL"}
    env |= {"XDG_CONFIG_HOME": str(tmp_path / "config"), "NO_COLOR": "1"}
    login = subprocess.run([FPLUS, "login", stack.manager.url, "--config-store",
                            stack.store.url, "--password-stdin"], env=env,
                           input=ADMIN_PASSWORD + "\n", capture_output=True, text=True,
                           timeout=120, check=False)
    assert login.returncode == 0, login.stderr
    values = tmp_path / "values.yaml"
    values.write_text(bomb(9))
    done = subprocess.run([FPLUS, "cluster", "create", "cli-bomb", "--values", str(values)],
                          env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert "alias bomb" in done.stderr and "Traceback" not in done.stderr
    assert [line for line in done.stderr.splitlines() if "alias bomb" in line]
    assert "cli-bomb" not in cluster_names(stack)


def _import(stack: Stack, command: str, source: Path) -> subprocess.CompletedProcess[str]:
    return run_command("fplus.cluster_manager.cli", command, str(source), "--config-store",
                       stack.store.url, "--data-dir", str(stack.root / "cm"),
                       "--git", stack.git.url)


def test_import_chart_refuses_a_chart_yaml_bomb(stack: Stack, tmp_path: Path) -> None:
    chart = tmp_path / "bomb-chart"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: bomb-chart\nversion: 0.1.0\n"
                                      "annotations:\n" + "".join(
                                          "  " + line + "\n"
                                          for line in bomb(9).splitlines()))
    (chart / "templates" / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\n")
    done = _import(stack, "import-chart", chart)
    assert done.returncode == 1, (done.returncode, done.stdout, done.stderr)
    assert "alias bomb" in done.stderr and "nothing was imported" in done.stderr
    assert "Traceback" not in done.stderr


def test_import_flux_refuses_an_export_with_a_bomb(stack: Stack, tmp_path: Path) -> None:
    export = tmp_path / "flux.yaml"
    export.write_text(need(FLUX_INSTALL).read_text() + "---\n" + bomb(9))
    done = _import(stack, "import-flux", export)
    assert done.returncode == 1, (done.returncode, done.stdout, done.stderr)
    assert "alias bomb" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize(("text", "reason"), [
    ("[" * 100_000 + "]" * 100_000, "nests deeper than"),  # libyaml's composer recurses in C
    ("a: &x [1, *x]\n", "inside its own anchor"),
])
def test_deep_and_recursive_yaml_is_refused_without_crashing(
        stack: Stack, text: str, reason: str) -> None:
    session, page = console_session(stack)
    csrf = re.search(r'name="csrf" value="([0-9a-f]{64})"', page)
    assert csrf
    r = session.post(f"{stack.manager.url}/ui/new", timeout=30, data={
        "csrf": csrf.group(1), "name": "deep-edge", "namespace": "fplus-edge",
        "values": text})
    assert r.status_code == 422 and reason in r.text, (r.status_code, r.text[:300])
