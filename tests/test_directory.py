"""Service discovery: with only the Directory URL (the Config Store's), a client resolves
every service UUID to the URL that service was started with (``GET /v1/service/<uuid>``)."""

from __future__ import annotations

from pathlib import Path

import pytest
import requests

from fplus.config_store import uuids
from fplus.config_store.client import ConfigStoreClient, Forbidden
from fplus.git_server._domain import setup as git_setup
from harness.servers import ADMIN_PASSWORD
from harness.stack import Stack
from tests.conftest import make_user


@pytest.fixture(scope="module")
def stack(shared_stack: Stack) -> Stack:
    """The session's stack: these tests only add and look at objects of their own."""
    return shared_stack


def test_a_client_with_the_directory_url_alone_finds_every_service(stack: Stack) -> None:
    directory = stack.store.url  # nothing else is given to the client
    with ConfigStoreClient(directory, "admin", ADMIN_PASSWORD) as client:
        found = {service: client.service_url(service) for service in (
            uuids.Service.ConfigDB, uuids.Service.Auth, uuids.Service.Directory,
            uuids.Service.Git, uuids.Service.Clusters)}
        assert found == {uuids.Service.ConfigDB: stack.store.url,
                         uuids.Service.Auth: stack.store.url,
                         uuids.Service.Directory: stack.store.url,
                         uuids.Service.Git: stack.git.url,
                         uuids.Service.Clusters: stack.manager.url}
        assert client.service_url(uuids.Service.MQTT) is None  # nobody provides it
    # the URLs found work: each service answers its own /ping there
    for service, url in found.items():
        assert requests.get(f"{url}/ping", timeout=10).status_code == 200, service


def test_the_answer_has_the_directory_shape_and_needs_credentials(stack: Stack) -> None:
    url = f"{stack.store.url}/v1/service/{uuids.Service.Clusters.upper()}"
    r = requests.get(url, auth=("admin", ADMIN_PASSWORD), timeout=10)
    assert r.status_code == 200
    assert r.json() == [{"service": uuids.Service.Clusters, "url": stack.manager.url}]
    assert requests.get(url, timeout=10).status_code == 401
    missing = requests.get(f"{stack.store.url}/v1/service/{uuids.Service.MQTT}",
                           auth=("admin", ADMIN_PASSWORD), timeout=10)
    assert missing.status_code == 404 and "no provider" in missing.json()["error"]
    assert requests.get(f"{stack.store.url}/v1/service/not-a-uuid",  # 410 as every
                        auth=("admin", ADMIN_PASSWORD), timeout=10).status_code == 410  # route
    _, user = make_user(stack.admin)  # any principal may look services up
    assert user.get(f"/v1/service/{uuids.Service.Git}").json()[0]["url"] == stack.git.url


def test_a_service_may_advertise_only_itself(stack: Stack) -> None:
    password = Path(stack.root / "git" / git_setup.PASSWORD_FILE).read_text().strip()
    with ConfigStoreClient(stack.store.url, git_setup.PRINCIPAL_NAME, password) as git:
        git.advertise_service(uuids.Service.Git, stack.git.url)  # its own: allowed
        with pytest.raises(Forbidden):
            git.advertise_service(uuids.Service.Clusters, "http://127.0.0.9:1")
    with ConfigStoreClient(stack.store.url, "admin", ADMIN_PASSWORD) as client:
        assert client.service_url(uuids.Service.Clusters) == stack.manager.url
