"""Start-up that fails loudly: a taken port, missing or wrong credentials, an unreachable
Config Store, a dying child of ``up`` are each one line on stderr and a non-zero exit."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import requests

from harness.servers import (
    ADMIN_PASSWORD,
    ConfigStoreProcess,
    free_port,
    free_port_block,
    plain_env,
    run_command,
    start_all_in_one,
    taken_port,
    wait_until_up,
)

SERVICES = {"fplus.config_store.cli": "config-store",
            "fplus.git_server.cli": "git-server",
            "fplus.cluster_manager.cli": "cluster-manager"}
# the services that log in to a store
CLIENTS = ["fplus.git_server.cli", "fplus.cluster_manager.cli"]


def one_line(done: subprocess.CompletedProcess[str]) -> str:
    """The single stderr line of a command that failed without a traceback."""
    assert done.returncode != 0, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


def env_with(**extra: str) -> dict[str, str]:
    """Our environment without FPLUS_* variables, plus ``extra``."""
    return plain_env() | extra


def in_use(port: int) -> str:
    return (f"127.0.0.1:{port} is already in use "
            f"(another `make run`? see `ss -ltnp 'sport = :{port}'`)")


@pytest.mark.parametrize("module", SERVICES)
def test_a_taken_port_is_one_line(module: str, tmp_path: Path) -> None:
    data = tmp_path / "data"
    with taken_port() as port:
        done = run_command(module, "serve", "--data-dir", str(data), "--port", str(port),
                           env=env_with(FPLUS_USER="admin", FPLUS_PASSWORD="x"))
    assert one_line(done) == f"{SERVICES[module]}: {in_use(port)}"
    assert not data.exists()  # refused before anything was written


@pytest.mark.parametrize("module", CLIENTS)
def test_seed_without_credentials_names_the_variables(module: str, tmp_path: Path) -> None:
    done = run_command(module, "seed", "--data-dir", str(tmp_path / "data"), "--config-store",
                       f"http://127.0.0.1:{free_port()}")
    assert one_line(done) == (f"{SERVICES[module]}: no Config Store credentials: set FPLUS_USER "
                              "and FPLUS_PASSWORD (a Config Store administrator)")


@pytest.mark.parametrize("module", CLIENTS)
def test_serve_unseeded_without_credentials_says_to_seed(module: str, tmp_path: Path) -> None:
    prog = SERVICES[module]
    done = run_command(module, "serve", "--data-dir", str(tmp_path / "data"),
                       "--port", str(free_port()), "--config-store",
                       f"http://127.0.0.1:{free_port()}")
    assert one_line(done) == (
        f"{prog}: no Config Store credentials: run `{prog} seed` first (with administrator "
        f"credentials; it writes {tmp_path / 'data' / (prog + '-password')}), or set "
        "FPLUS_PASSWORD_FILE, or FPLUS_USER and FPLUS_PASSWORD")


@pytest.mark.parametrize("module", CLIENTS)
def test_serve_with_a_wrong_password_file_says_to_rotate_it(
        module: str, tmp_path: Path, config_store: ConfigStoreProcess) -> None:
    prog = SERVICES[module]
    (tmp_path / "password").write_text("not-the-password\n")
    done = run_command(module, "serve", "--data-dir", str(tmp_path / "data"),
                       "--port", str(free_port()), "--config-store", config_store.url,
                       env=env_with(FPLUS_PASSWORD_FILE=str(tmp_path / "password")))
    assert one_line(done) == (f"{prog}: {config_store.url} refused {prog} with the password "
                              f"from {tmp_path / 'password'}: run `{prog} seed "
                              "--rotate-password` with this data dir (seeding never replaces "
                              "an existing principal's password otherwise)")


@pytest.mark.parametrize("module", CLIENTS)
def test_serve_with_administrator_credentials_seeds_first_and_says_so(
        module: str, tmp_path: Path, fresh_store: ConfigStoreProcess) -> None:
    """Backward compatible: FPLUS_USER=admin still works; ``serve`` seeds, warns, and runs
    as its own principal. A store of its own: seeding refuses to replace the password of a
    service principal another test already made."""
    config_store = fresh_store
    prog, data = SERVICES[module], tmp_path / "data"
    port = free_port()
    args = [sys.executable, "-m", module, "serve", "--data-dir", str(data), "--port", str(port),
            "--config-store", config_store.url]
    if module == "fplus.cluster_manager.cli":
        args += ["--git", f"http://127.0.0.1:{free_port()}", "--git-repos", str(tmp_path / "r")]
    proc = subprocess.Popen(args, env=env_with(FPLUS_USER="admin", FPLUS_PASSWORD=ADMIN_PASSWORD),
                            start_new_session=True, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        wait_until_up(f"http://127.0.0.1:{port}/ping", proc=proc)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        out, _ = proc.communicate(timeout=30)
    assert f"run `{prog} seed` once instead" in out, out
    assert (data / f"{prog}-password").stat().st_mode & 0o777 == 0o600


@pytest.mark.parametrize("module", CLIENTS)
def test_wrong_credentials_name_the_store(module: str, tmp_path: Path,
                                          config_store: ConfigStoreProcess) -> None:
    done = run_command(module, "serve", "--data-dir", str(tmp_path / "data"),
                       "--port", str(free_port()), "--config-store", config_store.url + "/",
                       env=env_with(FPLUS_USER="admin", FPLUS_PASSWORD="not-" + ADMIN_PASSWORD))
    assert one_line(done) == (f"{SERVICES[module]}: wrong username or password for "
                              f"{config_store.url}: check FPLUS_USER (admin) and FPLUS_PASSWORD")


@pytest.mark.parametrize("module", CLIENTS)
def test_an_unreachable_store_is_one_line_soon(module: str, tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    done = run_command(module, "serve", "--data-dir", str(tmp_path / "data"),
                       "--port", str(free_port()),
                       env=env_with(FPLUS_USER="admin", FPLUS_PASSWORD="x", CONFIG_STORE_URL=url),
                       timeout=30)  # it gives up after a few seconds, not the client's retries
    assert one_line(done) == (f"{SERVICES[module]}: cannot reach the Config Store at {url}: "
                              "is it running? check --config-store / CONFIG_STORE_URL")


def test_up_on_a_taken_port_names_it_and_starts_nothing(tmp_path: Path) -> None:
    port = free_port_block(3)
    with taken_port(port + 1):
        done = run_command("fplus.cluster_manager.cli", "up", "--data-dir", str(tmp_path / "data"),
                           "--port", str(port))
    assert one_line(done) == (
        f"cluster-manager up: 127.0.0.1:{port + 1} (Config Store) is already in use "
        f"(another `make run`? see `ss -ltnp 'sport = :{port + 1}'`)")
    assert "Up:" not in done.stdout
    assert not (tmp_path / "data").exists()


def children(pid: int) -> list[int]:
    """The direct children of ``pid`` (Linux /proc)."""
    path = Path(f"/proc/{pid}/task/{pid}/children")
    if not path.exists():
        pytest.skip("no /proc/PID/task/PID/children here")
    return [int(p) for p in path.read_text().split()]


def cmdline(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")


def test_up_exits_non_zero_when_a_child_dies(tmp_path: Path) -> None:
    port = free_port_block(3)
    proc = start_all_in_one(tmp_path / "data", port, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        wait_until_up(f"http://127.0.0.1:{port}/ping", proc=proc)  # a fresh data dir starts
        git = next(c for c in children(proc.pid) if "fplus.git_server.cli" in cmdline(c))
        os.killpg(git, signal.SIGKILL)  # its own process group: gunicorn master and worker
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.communicate(timeout=30)
    assert proc.returncode != 0
    assert "Traceback" not in out + err
    generated = (tmp_path / "data/config-store/admin-password").read_text().strip()
    assert "Generated the admin password, saved in" in out
    assert generated not in out + err  # a secret is never printed, only where it is
    assert ("cluster-manager up: the Git server stopped unexpectedly (killed by SIGKILL); "
            "stopping the others") in err.splitlines()
    for p in (port, port + 1):  # the others were stopped
        with pytest.raises(requests.ConnectionError):
            requests.get(f"http://127.0.0.1:{p}/ping", timeout=1)


def test_up_uses_fplus_admin_password(tmp_path: Path) -> None:
    port = free_port_block(3)
    env = dict(os.environ, FPLUS_ADMIN_PASSWORD="from-the-environment")
    proc = subprocess.Popen([sys.executable, "-m", "fplus.cluster_manager.cli", "up", "--data-dir",
                             str(tmp_path / "data"), "--port", str(port)],
                            env=env, start_new_session=True, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        wait_until_up(f"http://127.0.0.1:{port}/ping", proc=proc)
        auth = ("admin", "from-the-environment")
        assert requests.get(f"http://127.0.0.1:{port + 1}/v2/app", auth=auth, timeout=10).ok
        assert not (tmp_path / "data/config-store/admin-password").exists()
    except RuntimeError as exc:  # `up` ended before it served: what it said is why
        raise AssertionError(f"{exc}:\n{proc.communicate(timeout=30)[0]}") from None
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGTERM)
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0, out
    assert "password $FPLUS_ADMIN_PASSWORD" in out, out
