"""``fplus login`` and ``fplus whoami``, the profile every other command runs with, and the
token ``fplus kube-credential`` hands kubectl."""

from __future__ import annotations

import dataclasses
import os
import sys
from datetime import UTC, datetime, timedelta

import click
import requests

from fplus.config_store import uuids
from fplus.config_store.client import (
    ConfigStoreClient,
    ConfigStoreError,
    ConnectionFailed,
)

from . import profile as profiles
from .api import MANAGER_URL, ApiError, ManagerApi
from .output import emit, output_option
from .transport import unreachable


def current() -> profiles.Profile:
    """The profile with the environment's overrides (see :mod:`fplus.cli.profile`)."""
    try:
        return profiles.load()
    except profiles.ProfileError as exc:
        raise ApiError(0, str(exc)) from None


def trust(ca_file: str | None) -> None:
    """Make the Config Store client verify HTTPS against ``ca_file`` (it reads the env)."""
    if ca_file:
        os.environ["FPLUS_CA_FILE"] = ca_file


def manager() -> ManagerApi:
    """The Cluster Manager of the current profile, with its credentials."""
    found = current()
    if found.authorization() is None:
        raise ApiError(401, "not logged in: run `fplus login URL` (or set FPLUS_TOKEN, or "
                            "FPLUS_USER and FPLUS_PASSWORD)")
    return ManagerApi(found)


CONFIG_STORE = "the Config Store"
STORE_URL = "--config-store (or CONFIG_STORE_URL)"
NAMES = {uuids.Service.Clusters: "the Cluster Manager", uuids.Service.ConfigDB: CONFIG_STORE}


def _ping(url: str, ca_file: str | None, what: str, where: str) -> dict[str, object]:
    """The service ``url``'s ``/ping`` answer (``{}``: it answered no ping); ApiError with
    one plain sentence when nothing answered."""
    try:
        resp = requests.get(f"{url}/ping", timeout=10, verify=ca_file or True)
    except requests.RequestException as exc:
        raise ApiError(0, unreachable(what, url, exc, where)) from None
    try:
        body = resp.json() if resp.ok else None
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


def _check(url: str, ca_file: str | None, service: str, where: str) -> dict[str, object]:
    """``url``'s ``/ping`` answer; ApiError unless it answers as ``service``, naming what it
    is instead."""
    what = NAMES[service]
    body = _ping(url, ca_file, what, where)
    found = body.get("service")
    if found == service:
        return body
    instead = (f"it is {NAMES[found]}" if isinstance(found, str) and found in NAMES
               else "its /ping names no such service")
    raise ApiError(0, f"{url} is not {what} ({instead}); check {where}")


ENDS_EARLY = timedelta(seconds=120)
"""How long before its stated end ``fplus`` stops handing a token out (the Config Store
refuses one in its last minute)."""


def mint(store: str, user: str, password: str, ca_file: str | None,
         where: str) -> tuple[str, datetime | None]:
    """A new token for ``user`` (``POST /token`` with HTTP Basic) and when it ends, as the
    Config Store says; ApiError with one sentence when it was refused or not reached."""
    try:
        resp = requests.post(f"{store}/token", auth=(user, password), timeout=10,
                             verify=ca_file or True)
    except requests.RequestException as exc:
        raise ApiError(0, unreachable(CONFIG_STORE, store, exc, where)) from None
    if resp.status_code == 401:
        raise ApiError(401, f"wrong username or password for {store}")
    try:
        body = resp.json() if resp.ok else None
    except ValueError:
        body = None
    token = body.get("token") if isinstance(body, dict) else None
    if not isinstance(body, dict) or not isinstance(token, str) or not token:
        why = f"refused the request ({resp.status_code})" if not resp.ok else "answered no token"
        raise ApiError(0, f"{CONFIG_STORE} at {store} {why}; check {where}")
    expiry = body.get("expiry")  # milliseconds since the epoch, as ACS says it
    if not isinstance(expiry, int | float) or isinstance(expiry, bool):
        return token, None
    return token, datetime.fromtimestamp(expiry / 1000 if expiry > 1e11 else expiry, UTC)


def rfc3339(when: datetime) -> str:
    """``when`` as Kubernetes writes times (UTC, to the second)."""
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _ends(saved: str | None) -> datetime | None:
    try:
        found = datetime.fromisoformat(saved.replace("Z", "+00:00")) if saved else None
    except ValueError:
        return None
    return found.replace(tzinfo=found.tzinfo or UTC) if found else None


def credential(now: datetime | None = None) -> tuple[str, datetime | None]:
    """The token for the Cluster Manager and until when to use it (None: unknown): a new one
    for ``FPLUS_USER``/``FPLUS_PASSWORD``, else ``FPLUS_TOKEN``, else the saved session's
    while it lasts (a saved token cannot be renewed without the password it came from)."""
    found = current()
    if found.user and found.password:
        token, ends = mint(found.config_store_url, found.user, found.password, found.ca_file,
                           STORE_URL)
        return token, ends - ENDS_EARLY if ends else None
    if not found.token:
        raise ApiError(401, "not logged in: run `fplus login URL` (or set FPLUS_TOKEN, or "
                            "FPLUS_USER and FPLUS_PASSWORD)")
    ends = _ends(found.expires)
    if ends is None:
        return found.token, None
    if (now or datetime.now(UTC)) >= ends - ENDS_EARLY:
        raise ApiError(401, f"the session `fplus login` saved ended at {rfc3339(ends)}: run "
                            "`fplus login` again")
    return found.token, ends - ENDS_EARLY


def _store_failed(url: str, exc: ConfigStoreError, where: str) -> str:
    """One sentence for a Config Store call that failed: unreachable, or its answer."""
    if isinstance(exc, ConnectionFailed):
        return unreachable(CONFIG_STORE, url, exc, where)
    return f"{CONFIG_STORE} at {url} refused the request ({exc.status}); check {where}"


@click.command("login")
@click.argument("url", required=False)
@click.option("--config-store", "config_store", metavar="URL",
              help="the Config Store (default: the one the Cluster Manager's /ping names, "
                   "else its host on port 8701, said when assumed)")
@click.option("-u", "--username", default="admin", show_default=True)
@click.option("--password-stdin", is_flag=True, help="read the password from standard input")
@click.option("--ca-file", type=click.Path(exists=True, dir_okay=False),
              help="PEM CA bundle to verify HTTPS with (saved with the login)")
def login(url: str | None, config_store: str | None, username: str, password_stdin: bool,
          ca_file: str | None) -> None:
    """Log in to the Cluster Manager at URL; saves a token, never the password."""
    saved = current()
    base = (url or saved.url).rstrip("/")
    ca = ca_file or saved.ca_file
    target = profiles.Profile(url=base, config_store=config_store or (
        saved.config_store if url is None else None), user=username, ca_file=ca)
    named = _check(base, ca, uuids.Service.Clusters, MANAGER_URL).get("configStore")
    where = STORE_URL
    if target.config_store is None and isinstance(named, str) and named:
        target = dataclasses.replace(target, config_store=named.rstrip("/"))
        where = f"{STORE_URL}: the Cluster Manager at {base} named it"
        click.echo(f"Config Store: {target.config_store} (as the Cluster Manager names it)",
                   err=True)
    elif target.config_store is None:
        where = (f"{STORE_URL}: it was assumed on the Cluster Manager's host, port "
                 f"{profiles.CONFIG_STORE_PORT}")
        click.echo(f"Config Store: assuming {target.config_store_url} (the Cluster Manager's "
                   f"host, port {profiles.CONFIG_STORE_PORT}); give --config-store URL if it "
                   "is elsewhere", err=True)
    store = target.config_store_url
    _check(store, ca, uuids.Service.ConfigDB, where)
    if password_stdin:
        password = sys.stdin.readline().rstrip("\r\n")
    else:
        password = click.prompt(f"Password for {username}", hide_input=True)
    token, ends = mint(store, username, password, ca, where)
    path = profiles.save(dataclasses.replace(target, token=token,
                                             expires=rfc3339(ends) if ends else None))
    click.echo(f"Logged in to {base} as {username} (session saved in {path})", err=True)


@click.command("whoami")
@output_option
def whoami(fmt: str) -> None:
    """The principal the current credentials prove."""
    found = current()
    header = found.authorization()
    if header is None:
        raise ApiError(401, "not logged in: run `fplus login URL`")
    trust(found.ca_file)
    try:
        with ConfigStoreClient(found.config_store_url, retries=1) as client:
            who = client.identify(header)
    except ConfigStoreError as exc:
        raise ApiError(0, _store_failed(found.config_store_url, exc, STORE_URL)) from None
    if who is None:
        raise ApiError(401, f"{found.config_store_url} refused the saved session: run "
                            "`fplus login`")
    emit(who, fmt, [("NAME", lambda w: w.get("name")), ("UUID", lambda w: w.get("uuid"))])


@click.command("logout")
def logout() -> None:
    """Forget the saved session and end its token on the Config Store (FPLUS_* variables
    are yours to unset)."""
    saved = profiles.load({k: v for k, v in os.environ.items()
                           if k in ("FPLUS_CONFIG", "XDG_CONFIG_HOME", "HOME")})
    if not saved.token:
        click.echo("fplus: no saved session: nothing to forget", err=True)
        return
    trust(saved.ca_file)
    ended = "its token ended"
    try:
        with ConfigStoreClient(saved.config_store_url, retries=1) as client:
            client.end_token(f"Bearer {saved.token}")
    except ConfigStoreError as exc:
        ended = ("its token not ended (" + _store_failed(saved.config_store_url, exc,
                                                         STORE_URL) + "); it lapses")
    path = profiles.save(dataclasses.replace(saved, token=None, user=None, expires=None))
    click.echo(f"Logged out of {saved.url}: session forgotten ({path}), {ended}", err=True)
