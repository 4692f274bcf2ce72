"""Edge Sync settings from the environment (the ``cluster-config`` ConfigMap and a Secret)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from fplus.config_store.client import ConfigStoreClient
from fplus.config_store.uuids import is_uuid
from fplus.kubenames import is_dns1123_label

from .retry import Backoff

SERVICE_ACCOUNT_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


class SettingsError(ValueError):
    """The environment does not describe a usable Edge Sync (every problem is listed)."""


@dataclass(frozen=True)
class Settings:
    """What Edge Sync needs to know; see :func:`from_env` for the variables."""

    cluster_uuid: str
    cluster_name: str
    config_store_url: str
    username: str
    password: str = field(repr=False)
    username_file: str | None = None
    """``FPLUS_USER_FILE``: re-read at every token fetch (see :meth:`credentials`)."""
    password_file: str | None = None
    """``FPLUS_PASSWORD_FILE``: re-read at every token fetch."""
    namespace: str | None = None
    """Where deployments are applied; None: the service account's namespace."""
    sealed_secrets_namespace: str = "sealed-secrets"
    sealed_secrets_controller: str = "sealed-secrets-controller"
    sealed_secrets_port: str | None = None
    """Port (name or number) of the controller's Service; None: its first port."""
    realm: str | None = None
    directory_url: str | None = None
    git_url: str | None = None
    """Base URL of the Git server for chart sources; None: derived from the self-link."""
    cluster_manager_url: str | None = None
    """``CLUSTER_MANAGER_URL``: the Cluster Manager as the edge reaches it, where Edge Sync
    opens its tunnel (``/v1/cluster/<uuid>/tunnel``); None: no tunnel."""
    heartbeat_interval: float = 30.0
    flux_interval: float = 15.0
    """How often the readiness of Flux's objects and the Pods' Secret references are read
    (the ``flux`` and ``secretRefs`` status keys)."""
    cert_interval: float = 3600.0
    cert_retry: float = 60.0
    resync_interval: float = 600.0
    watch_timeout: float = 300.0
    backoff: Backoff = field(default_factory=Backoff)

    def credentials(self) -> tuple[str, str]:
        """``(username, password)``: what the ``*_FILE`` files hold now, else the env values.

        The client calls this at every token fetch, so a password rotated in a mounted
        Secret (the kubelet rewrites its files) is used from the next 401 on, with no
        restart. Raises OSError or ValueError if a file cannot be read or is empty.
        """
        return (_current(self.username_file, self.username, "FPLUS_USER_FILE"),
                _current(self.password_file, self.password, "FPLUS_PASSWORD_FILE"))


def _current(path: str | None, fixed: str, what: str) -> str:
    if path is None:
        return fixed
    value = Path(path).read_text().strip()
    if not value:
        raise ValueError(f"{what} {path} is empty")
    return value


def _read_file(path: str, what: str, problems: list[str]) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError as exc:
        problems.append(f"{what}: cannot read {path}: {exc.strerror or exc}")
        return None


def _secret(env: Mapping[str, str], name: str, problems: list[str]) -> str | None:
    """``NAME`` from the environment, or the content of the file named by ``NAME_FILE``."""
    if env.get(f"{name}_FILE"):
        return _read_file(env[f"{name}_FILE"], f"{name}_FILE", problems)
    return env.get(name) or None


def _number(env: Mapping[str, str], name: str, default: float, problems: list[str]) -> float:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if value <= 0:
        problems.append(f"{name} must be a positive number of seconds, not {raw!r}")
        return default
    return value


def _check(value: str | None, name: str, valid: Callable[[str], bool], rule: str,
           problems: list[str]) -> str:
    if not value:
        problems.append(f"{name} is required")
        return ""
    if not valid(value):
        problems.append(f"{name} must be {rule}, not {value!r}")
    return value


def _http_url(value: str) -> bool:
    """An absolute http(s) URL naming a host, with no query or fragment
    (``https://cm.example:8443/prefix``)."""
    try:
        parts = urlsplit(value)
        port_ok = parts.port is None or parts.port > 0
    except ValueError:  # a malformed IPv6 host, a port out of range
        return False
    return (parts.scheme in ("http", "https") and bool(parts.hostname) and port_ok
            and not parts.query and not parts.fragment and not any(c.isspace() for c in value))


def default_namespace(env: Mapping[str, str],
                      sa_file: Path = SERVICE_ACCOUNT_NAMESPACE) -> str | None:
    """``POD_NAMESPACE`` (downward API), else the mounted service account's namespace."""
    if env.get("POD_NAMESPACE"):
        return env["POD_NAMESPACE"]
    try:
        return sa_file.read_text().strip() or None
    except OSError:
        return None


def from_env(env: Mapping[str, str]) -> Settings:
    """Settings from environment variables.

    Required: ``CLUSTER_UUID``, ``CLUSTER_NAME``, ``CONFIG_STORE_URL``, and credentials
    ``FPLUS_USER`` / ``FPLUS_PASSWORD`` (or ``FPLUS_USER_FILE`` / ``FPLUS_PASSWORD_FILE``
    naming files, e.g. a mounted Secret, re-read at every token fetch). Optional:
    ``POD_NAMESPACE``, ``SEALED_SECRETS_NAMESPACE``, ``SEALED_SECRETS_CONTROLLER``,
    ``SEALED_SECRETS_PORT``, ``REALM``, ``DIRECTORY_URL``, ``GIT_URL``,
    ``CLUSTER_MANAGER_URL`` (an http(s) URL; unset: no tunnel) and the intervals (seconds)
    ``HEARTBEAT_INTERVAL``, ``FLUX_INTERVAL``, ``CERT_INTERVAL``, ``CERT_RETRY``,
    ``RESYNC_INTERVAL``, ``WATCH_TIMEOUT``, ``RETRY_INITIAL``, ``RETRY_MAX``, and
    ``FPLUS_CA_FILE`` (the PEM CA bundle the Config Store's HTTPS certificate is checked
    against, instead of the system's).
    Raises :class:`SettingsError`.
    """
    problems: list[str] = []
    uuid = _check(env.get("CLUSTER_UUID"), "CLUSTER_UUID", is_uuid,
                  "a lower-case UUID", problems)
    name = _check(env.get("CLUSTER_NAME"), "CLUSTER_NAME", is_dns1123_label,
                  "a DNS-1123 label", problems)
    url = _check(env.get("CONFIG_STORE_URL"), "CONFIG_STORE_URL",
                 lambda u: u.startswith(("http://", "https://")), "an http(s) URL", problems)
    manager = env.get("CLUSTER_MANAGER_URL") or None
    if manager is not None:
        _check(manager, "CLUSTER_MANAGER_URL", _http_url, "an http(s) URL", problems)
    user = _secret(env, "FPLUS_USER", problems)
    password = _secret(env, "FPLUS_PASSWORD", problems)
    if not user or not password:
        problems.append("credentials are required: FPLUS_USER and FPLUS_PASSWORD "
                        "(or FPLUS_USER_FILE and FPLUS_PASSWORD_FILE)")
    heartbeat, flux, cert, cert_retry, resync, watch, retry_initial, retry_max = (
        _number(env, var, default, problems) for var, default in (
            ("HEARTBEAT_INTERVAL", 30.0), ("FLUX_INTERVAL", 15.0), ("CERT_INTERVAL", 3600.0),
            ("CERT_RETRY", 60.0), ("RESYNC_INTERVAL", 600.0), ("WATCH_TIMEOUT", 300.0),
            ("RETRY_INITIAL", 5.0), ("RETRY_MAX", 320.0)))
    if env.get("FPLUS_CA_FILE"):  # the client library trusts it (a private CA)
        ca = _read_file(env["FPLUS_CA_FILE"], "FPLUS_CA_FILE", problems)
        if ca is not None and "-----BEGIN CERTIFICATE-----" not in ca:
            problems.append(f"FPLUS_CA_FILE {env['FPLUS_CA_FILE']} holds no PEM certificate")
    if problems or not user or not password:  # no credentials is a problem listed
        raise SettingsError("; ".join(problems))
    return Settings(
        cluster_uuid=uuid, cluster_name=name, config_store_url=url.rstrip("/"),
        username=user, password=password,
        username_file=env.get("FPLUS_USER_FILE") or None,
        password_file=env.get("FPLUS_PASSWORD_FILE") or None,
        namespace=default_namespace(env),
        sealed_secrets_namespace=env.get("SEALED_SECRETS_NAMESPACE") or "sealed-secrets",
        sealed_secrets_controller=(env.get("SEALED_SECRETS_CONTROLLER")
                                   or "sealed-secrets-controller"),
        sealed_secrets_port=env.get("SEALED_SECRETS_PORT") or None,
        realm=env.get("REALM") or None,
        directory_url=env.get("DIRECTORY_URL") or None,
        git_url=(env.get("GIT_URL") or "").rstrip("/") or None,
        cluster_manager_url=manager.rstrip("/") if manager else None,
        heartbeat_interval=heartbeat, flux_interval=flux, cert_interval=cert,
        cert_retry=cert_retry, resync_interval=resync, watch_timeout=watch,
        backoff=Backoff(retry_initial, retry_max))


def config_store_client(settings: Settings, **options: Any) -> ConfigStoreClient:
    """A client for ``settings``' Config Store asking :meth:`Settings.credentials` at every
    token fetch (``options`` go to :class:`ConfigStoreClient`: timeout, retries, ...)."""
    return ConfigStoreClient(settings.config_store_url, credentials=settings.credentials,
                             **options)
