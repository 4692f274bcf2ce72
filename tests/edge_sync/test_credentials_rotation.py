"""A password rotated in the Config Store and in the mounted files: the heartbeat goes on."""

from __future__ import annotations

import secrets
import time
from pathlib import Path

from fplus.config_store.client import ConfigStoreClient
from tests.edge_sync.conftest import StartAgent
from tests.edge_sync.helpers import Edge, make_edge, status, wait_for


def _last_seen(cs: ConfigStoreClient, edge: Edge) -> str:
    return status(cs, edge).get("lastSeen") or ""


def _advances(cs: ConfigStoreClient, edge: Edge, times: int = 3, timeout: float = 20) -> None:
    """``lastSeen`` is written anew ``times`` times (0.5 s heartbeats)."""
    for n in range(times):
        seen = _last_seen(cs, edge)
        wait_for(lambda seen=seen: _last_seen(cs, edge) > seen, timeout=timeout,
                 what=f"heartbeat {n + 1} of {times}")


def test_heartbeat_survives_a_rotation_of_the_mounted_password(
        tmp_path: Path, cs_admin: ConfigStoreClient, start_agent: StartAgent) -> None:
    edge = make_edge(cs_admin)
    user_file, password_file = tmp_path / "username", tmp_path / "password"
    user_file.write_text(edge.username)
    password_file.write_text(edge.password)
    agent = start_agent(edge, FPLUS_USER_FILE=str(user_file),
                        FPLUS_PASSWORD_FILE=str(password_file))
    _advances(cs_admin, edge)

    for _ in range(2):  # twice: the second rotation starts from a re-read password
        new = secrets.token_urlsafe(12)
        cs_admin.set_password(edge.principal, new)  # forgets the agent's token: next is a 401
        time.sleep(1.0)  # some heartbeats fail meanwhile, as when the kubelet lags
        tmp = password_file.with_suffix(".new")
        tmp.write_text(new + "\n")
        tmp.replace(password_file)  # atomically, as the kubelet swaps a Secret volume
        _advances(cs_admin, edge)
    wait_for(lambda: agent.reporter.failures == 0, what="no failing writes")
    assert all(thread.is_alive() for thread in agent._threads)


def test_env_passwords_are_fixed(cs_admin: ConfigStoreClient, start_agent: StartAgent) -> None:
    """The control: a password given in the environment cannot follow a rotation."""
    edge = make_edge(cs_admin)
    agent = start_agent(edge)
    _advances(cs_admin, edge, times=1)
    cs_admin.set_password(edge.principal, secrets.token_urlsafe(12))
    wait_for(lambda: agent.reporter.failures >= 2, what="failing writes")
    stuck = _last_seen(cs_admin, edge)
    time.sleep(1.5)
    assert _last_seen(cs_admin, edge) == stuck
