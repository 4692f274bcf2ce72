"""Shared fixtures: a real Config Store per test session, and per-test isolation helpers."""

from __future__ import annotations

import functools
import inspect
import os
import re
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from fplus.config_store import uuids
from harness.postgres import ENV_URL, ExternalPostgres, PostgresServer, server_for_tests
from harness.servers import ADMIN_PASSWORD, Api, ConfigStoreProcess
from harness.stack import Stack, start_stack

pytest_plugins = ["tests.scheduling", "tests.rewrite_cache"]

# The services the tests start hash passwords with argon2id's cheapest parameters: the
# default's (64 MiB, three passes) cost a fifth of a CPU-second per hash and per first login,
# hundreds of times a run. tests/config_store/test_argon2_profile.py checks the default.
os.environ.setdefault("FPLUS_ARGON2_PROFILE", "CHEAPEST")


@pytest.fixture(scope="session")
def config_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConfigStoreProcess]:
    """One Config Store for the whole session (tests create their own objects)."""
    server = ConfigStoreProcess(tmp_path_factory.mktemp("cs") / "data").start()
    yield server
    server.stop()


@pytest.fixture
def fresh_store(tmp_path) -> Iterator[ConfigStoreProcess]:
    """A Config Store of this test's own (for restarts and kills)."""
    server = ConfigStoreProcess(tmp_path / "data").start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer | ExternalPostgres]:
    """A real PostgreSQL for the session: ``FPLUS_TEST_POSTGRES``, else a throwaway server.

    Without either the tests needing it skip, except under ``CI=true`` where they fail.
    """
    server = server_for_tests()
    if server is None:
        reason = (f"PostgreSQL needed: no initdb/postgres on PATH or in "
                  f"/usr/lib/postgresql/*/bin, and {ENV_URL} is not set")
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    server.start()
    yield server
    server.stop()


@pytest.fixture
def postgres_url(postgres: PostgresServer | ExternalPostgres) -> str:
    """A fresh, empty database on the session's PostgreSQL, as a ``postgresql://`` URL."""
    return postgres.create_database()


@pytest.fixture
def admin(config_store: ConfigStoreProcess) -> Api:
    """An HTTP session authenticated as the root principal."""
    return Api(config_store.url, ("admin", ADMIN_PASSWORD))


@pytest.fixture
def anon(config_store: ConfigStoreProcess) -> Api:
    """An HTTP session without credentials."""
    return Api(config_store.url)


@pytest.fixture
def new_app(admin: Api) -> str:
    """A fresh application object."""
    r = admin.post("/v2/object", json={"class": uuids.Class.App})
    assert r.status_code == 201, r.text
    return r.json()["uuid"]


@pytest.fixture
def new_obj(admin: Api) -> str:
    """A fresh individual (rank 0) object."""
    return make_object(admin, uuids.Class.Device)


def make_object(api: Api, klass: str, uuid_: str | None = None) -> str:
    """Create an object in ``klass`` and return its uuid."""
    body = {"class": klass} | ({"uuid": uuid_} if uuid_ else {})
    r = api.post("/v2/object", json=body)
    assert r.status_code in (200, 201), r.text
    return r.json()["uuid"]


def make_class(api: Api) -> str:
    """Create a rank-1 class."""
    return make_object(api, uuids.Class.R1Class)


def make_user(api: Api, name: str | None = None,
              password: str = "pw-" + "x" * 8) -> tuple[str, Api]:
    """Create a principal; returns its uuid and a session authenticated as it."""
    name = name or f"user-{uuid.uuid4().hex[:10]}"
    r = api.post("/v2/principal", json={"name": name, "password": password})
    assert r.status_code == 201, r.text
    return r.json()["uuid"], Api(api.base, (name, password))


def grant(api: Api, principal: str, permission: str, target: str, plural: bool = False,
          obj: str | None = None) -> str:
    """Add a grant and return its uuid."""
    body = {"principal": principal, "permission": permission, "target": target, "plural": plural}
    if obj:
        body["object"] = obj
    r = api.post("/v2/grant", json=body)
    assert r.status_code in (200, 201), r.text
    return r.json()["uuid"]


# What starts a process (one of our services, PostgreSQL, a command): a test is marked
# ``process`` when its own code or one of its fixtures' code names one of these, directly or
# through a function of tests/ or harness/ that it names (followed a few calls deep).
STARTS_A_PROCESS = re.compile(
    r"\b(ServiceProcess|ConfigStoreProcess|git_server_process|cluster_manager_process"
    r"|start_stack|start_replicas|start_all_in_one|PostgresServer|server_for_tests|Replicas"
    r"|EdgeCluster|Popen|run_command|subprocess\.\w+|check_output)\b|(?<![.\w])start\("
    r"|getfixturevalue\(\"postgres")


OURS = ("tests.", "harness.")


def _starts_a_process(function: Callable[..., Any], depth: int = 3) -> bool:
    return _calls_a_process_starter(inspect.unwrap(function), depth)


@functools.cache
def _calls_a_process_starter(function: Callable[..., Any], depth: int) -> bool:
    try:
        source = inspect.getsource(function)
    except (OSError, TypeError):
        return False
    if STARTS_A_PROCESS.search(source):
        return True
    if depth == 0:
        return False
    names = getattr(function, "__globals__", {})
    called = [names[n] for n in set(re.findall(r"\b[A-Za-z_]\w*\b", source)) if n in names]
    return any(_calls_a_process_starter(f, depth - 1) for f in called
               if inspect.isfunction(f) and f.__module__.startswith(OURS))


def _is_process_test(item: pytest.Item) -> bool:
    if item.get_closest_marker("process"):
        return True
    functions = [getattr(item, "function", None)]
    info = getattr(item, "_fixtureinfo", None)
    if info is not None:
        functions += [d.func for name in info.names_closure
                      for d in info.name2fixturedefs.get(name, ())]
    return any(_starts_a_process(f) for f in functions if f is not None)


# The fixtures that start a PostgreSQL: the session's, and the Cluster Manager HA package's own
# (its replicas are several service processes on one PostgreSQL database).
POSTGRES_FIXTURES = {"postgres", "own_postgres"}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests on PostgreSQL run in ``make test-replicas`` (see the ``replicas`` marker); tests
    that start a process are marked ``process`` (``make test-unit`` leaves them out) when the
    marker expression asks about it: reading every test's code costs each worker ~2 s."""
    mark_processes = "process" in (config.option.markexpr or "")
    for item in items:
        if POSTGRES_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.replicas)
        if mark_processes and _is_process_test(item):
            item.add_marker(pytest.mark.process)


@pytest.fixture(scope="session")
def shared_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """The whole stack (Config Store, Git server, Cluster Manager) started once per session
    (per pytest-xdist worker) and shared by every module whose tests only add clusters,
    principals and entries of their own and look only at those. A module that restarts,
    kills or reconfigures a service, or counts everything a service holds, starts its own
    (``module_stack`` or a fixture of its own)."""
    running = start_stack(tmp_path_factory.mktemp("shared-stack"))
    yield running
    running.stop()


@pytest.fixture(scope="module")
def module_stack(tmp_path_factory: pytest.TempPathFactory,
                 request: pytest.FixtureRequest) -> Iterator[Stack]:
    """The whole stack (Config Store, Git server, Cluster Manager) of one module."""
    running = start_stack(tmp_path_factory.mktemp(request.module.__name__.rsplit(".", 1)[-1]))
    yield running
    running.stop()
