"""Settings from the environment."""

from __future__ import annotations

from pathlib import Path

import pytest

from fplus.edge_sync.retry import Backoff
from fplus.edge_sync.settings import SettingsError, default_namespace, from_env

UUID = "c1d20000-0000-4000-8000-000000000001"
MINIMAL = {"CLUSTER_UUID": UUID, "CLUSTER_NAME": "shop-floor",
           "CONFIG_STORE_URL": "https://cs.example.com/", "FPLUS_USER": "op1sync/shop-floor",
           "FPLUS_PASSWORD": "s3cret"}


def test_minimal_environment_and_defaults() -> None:
    s = from_env(MINIMAL)
    assert (s.cluster_uuid, s.cluster_name, s.config_store_url) == (
        UUID, "shop-floor", "https://cs.example.com")
    assert (s.sealed_secrets_namespace, s.sealed_secrets_controller) == (
        "sealed-secrets", "sealed-secrets-controller")
    assert s.heartbeat_interval == 30 and s.cert_interval == 3600
    assert s.backoff == Backoff(5, 320)
    assert s.realm is None and s.git_url is None
    assert "s3cret" not in repr(s)


def test_every_problem_is_listed() -> None:
    with pytest.raises(SettingsError) as err:
        from_env({"CLUSTER_UUID": "C1D2", "CLUSTER_NAME": "Shop Floor",
                  "HEARTBEAT_INTERVAL": "soon", "RETRY_MAX": "-1"})
    message = str(err.value)
    for part in ("CLUSTER_UUID must be a lower-case UUID", "CLUSTER_NAME must be a DNS-1123",
                 "CONFIG_STORE_URL is required", "credentials are required",
                 "HEARTBEAT_INTERVAL must be a positive", "RETRY_MAX must be a positive"):
        assert part in message


def test_credentials_from_files(tmp_path: Path) -> None:
    (tmp_path / "user").write_text("op1sync/x\n")
    (tmp_path / "password").write_text("from-file\n")
    env = {k: v for k, v in MINIMAL.items() if not k.startswith("FPLUS")}
    s = from_env(env | {"FPLUS_USER_FILE": str(tmp_path / "user"),
                        "FPLUS_PASSWORD_FILE": str(tmp_path / "password")})
    assert (s.username, s.password) == ("op1sync/x", "from-file")
    with pytest.raises(SettingsError, match="cannot read"):
        from_env(env | {"FPLUS_USER": "u", "FPLUS_PASSWORD_FILE": str(tmp_path / "missing")})


def test_a_ca_bundle_must_be_a_readable_pem_file(tmp_path: Path) -> None:
    ca = tmp_path / "ca.crt"
    ca.write_text("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
    from_env(MINIMAL | {"FPLUS_CA_FILE": str(ca)})
    ca.write_text("not pem\n")
    with pytest.raises(SettingsError, match="holds no PEM certificate"):
        from_env(MINIMAL | {"FPLUS_CA_FILE": str(ca)})
    with pytest.raises(SettingsError, match="FPLUS_CA_FILE: cannot read"):
        from_env(MINIMAL | {"FPLUS_CA_FILE": str(tmp_path / "gone.crt")})


def test_credential_files_are_read_again_each_time(tmp_path: Path) -> None:
    (tmp_path / "password").write_text("first\n")
    env = {k: v for k, v in MINIMAL.items() if k != "FPLUS_PASSWORD"}
    s = from_env(env | {"FPLUS_PASSWORD_FILE": str(tmp_path / "password")})
    assert s.credentials() == ("op1sync/shop-floor", "first")
    (tmp_path / "password").write_text("second\n")  # rotated: the env user stays fixed
    assert s.credentials() == ("op1sync/shop-floor", "second")
    (tmp_path / "password").write_text("")
    with pytest.raises(ValueError, match="empty"):
        s.credentials()
    (tmp_path / "password").unlink()
    with pytest.raises(OSError):
        s.credentials()
    assert from_env(MINIMAL).credentials() == ("op1sync/shop-floor", "s3cret")


def test_options_and_intervals() -> None:
    s = from_env(MINIMAL | {"REALM": "EXAMPLE.COM", "GIT_URL": "https://git/", "RETRY_INITIAL":
                            "0.5", "RETRY_MAX": "2", "SEALED_SECRETS_PORT": "8080",
                            "POD_NAMESPACE": "fplus-edge"})
    assert (s.realm, s.git_url, s.sealed_secrets_port, s.namespace) == (
        "EXAMPLE.COM", "https://git", "8080", "fplus-edge")
    assert s.backoff == Backoff(0.5, 2)


def test_cluster_manager_url_is_optional_and_names_the_tunnel() -> None:
    assert from_env(MINIMAL).cluster_manager_url is None  # no tunnel
    assert from_env(MINIMAL | {"CLUSTER_MANAGER_URL": ""}).cluster_manager_url is None
    for given, kept in (("https://cm.example.com/", "https://cm.example.com"),
                        ("http://10.0.0.5:8700", "http://10.0.0.5:8700"),
                        ("https://edge.example:8443/fplus/", "https://edge.example:8443/fplus"),
                        ("https://[fd00::5]:8443", "https://[fd00::5]:8443")):
        assert from_env(MINIMAL | {"CLUSTER_MANAGER_URL": given}).cluster_manager_url == kept


@pytest.mark.parametrize("bad", ["cm.example.com", "ftp://cm.example.com", "https://",
                                 "https://cm.example.com/?x=1", "https://cm.example.com/#f",
                                 "https://[fd00::5", "https://cm.example.com:99999",
                                 "https://cm example.com", "wss://cm.example.com"])
def test_a_cluster_manager_url_must_be_an_http_url(bad: str) -> None:
    with pytest.raises(SettingsError) as err:
        from_env(MINIMAL | {"CLUSTER_MANAGER_URL": bad})
    assert str(err.value) == f"CLUSTER_MANAGER_URL must be an http(s) URL, not {bad!r}"


def test_namespace_from_the_service_account(tmp_path: Path) -> None:
    sa = tmp_path / "namespace"
    sa.write_text("edge-ns\n")
    assert default_namespace({}, sa) == "edge-ns"
    assert default_namespace({"POD_NAMESPACE": "pod-ns"}, sa) == "pod-ns"
    assert default_namespace({}, tmp_path / "absent") is None
