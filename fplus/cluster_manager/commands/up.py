"""``cluster-manager up``: the all-in-one stack on one machine, for trying it out.

Checks that its three ports are free, then starts the Config Store on P+1, runs the Git
server's and the Cluster Manager's ``seed`` steps with the administrator password, and starts
the Git server on P+2 and the Cluster Manager on P with their own credentials
only (the password files the seeds wrote; no administrator password in their environment),
each child in its own process group. It waits for each to answer ``/ping``, prints how to use
them, and stops them all on Ctrl-C or SIGTERM. If a child exits on its own, the others are
stopped and ``up`` exits non-zero naming it.

Every URL that reaches an edge (bootstrap URLs, the Git self-link, the Config Store URL in
the edge's configuration) names the ``--advertise`` host; the services listen on
``--listen`` (see :class:`Addresses`) and reach each other there.

With ``--tls`` every service serves HTTPS with a certificate from a local CA kept in
``DATA_DIR/tls`` (:mod:`fplus.serving.http.local_ca`); the services trust that CA
(``FPLUS_CA_FILE``) and bootstrap scripts carry it to edges.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import requests

from fplus.git import bare
from fplus.serving import in_use_message, taken_ports
from fplus.serving.http.addresses import host_or_ip, is_ip, is_loopback, is_wildcard
from fplus.serving.http.local_ca import StackCertificates, ensure_certificates

from ..escrow import keyring

PROG = "cluster-manager up"
HOST = "127.0.0.1"
"""Where the services listen and what they advertise when ``up`` is given neither."""
SEED_TIMEOUT = 60.0
"""Seconds a service's ``seed`` step may take before ``up`` gives up."""


START_TIMEOUT = 120.0
"""Seconds a child may take to answer ``/ping`` (a loaded two-core machine took over 30)."""

def _status(returncode: int) -> str:
    if returncode < 0:
        return f"killed by {signal.Signals(-returncode).name}"
    return f"exit status {returncode}"


@dataclass(frozen=True)
class Addresses:
    """Where the stack listens, and the host edges are told to use."""

    listen: str = HOST
    advertise: str = HOST

    @classmethod
    def parse(cls, advertise: str | None, listen: str | None) -> Addresses:
        """From ``--advertise`` and ``--listen``; SystemExit with one line if either is not a
        host. Listening defaults to the advertised address when it is an IP address (a
        name: every address), and to 127.0.0.1 when nothing is advertised."""
        try:
            shown = host_or_ip(advertise) if advertise else HOST
            if listen:
                bound = host_or_ip(listen).strip("[]")
            elif not advertise:
                bound = HOST
            else:
                every = "0.0.0.0"  # noqa: S104 - a name may resolve to any of them
                bound = shown.strip("[]") if is_ip(shown) else every
        except ValueError as exc:
            raise SystemExit(f"{PROG}: {exc}") from None
        return cls(bound, shown)

    @property
    def local(self) -> str:
        """The host the services reach each other at."""
        if is_wildcard(self.listen):
            return HOST
        return f"[{self.listen}]" if ":" in self.listen else self.listen

    @property
    def loopback(self) -> bool:
        """Whether edges would be given loopback addresses (only this machine could use
        them)."""
        return is_loopback(self.advertise)


@dataclass
class Child:
    """A service child process."""

    name: str
    module: str
    port: int
    args: list[str]
    seed_args: list[str] | None = None
    """The arguments of its ``seed`` step (None: it has none)."""
    proc: subprocess.Popen | None = None
    addresses: Addresses = Addresses()
    certificates: StackCertificates | None = None
    """With TLS: the pair it serves and the CA everyone trusts."""

    @property
    def scheme(self) -> str:
        """``https`` with TLS, else ``http``."""
        return "http" if self.certificates is None else "https"

    @property
    def url(self) -> str:
        """Where the other services reach it."""
        return f"{self.scheme}://{self.addresses.local}:{self.port}"

    @property
    def advertised_url(self) -> str:
        """Where edges and users reach it."""
        return f"{self.scheme}://{self.addresses.advertise}:{self.port}"

    def _tls_args(self) -> list[str]:
        if self.certificates is None:
            return []
        return ["--tls-cert", str(self.certificates.cert),
                "--tls-key", str(self.certificates.key)]

    def start(self, env: dict[str, str]) -> None:
        """Start the child with ``env`` in its own process group."""
        self.proc = subprocess.Popen(
            [sys.executable, "-m", self.module, "serve", "--host", self.addresses.listen,
             "--port", str(self.port), *self.args, *self._tls_args()],
            env=env, start_new_session=True)

    def seed(self, env: dict[str, str]) -> None:
        """Run the child's ``seed`` step with ``env`` (administrator credentials) to the end;
        SystemExit with its one line if it fails."""
        if self.seed_args is None:
            return
        try:
            done = subprocess.run([sys.executable, "-m", self.module, "seed", *self.seed_args],
                                  env=env, capture_output=True, text=True,
                                  timeout=SEED_TIMEOUT)
        except subprocess.TimeoutExpired:
            raise SystemExit(f"{PROG}: seeding the {self.name} did not finish within "
                             f"{SEED_TIMEOUT:.0f} s") from None
        if done.returncode != 0:
            lines = done.stderr.strip().splitlines() or [_status(done.returncode)]
            raise SystemExit(f"{PROG}: seeding the {self.name} failed: {lines[-1]}")

    def exited(self) -> str | None:
        """How the child ended (``"exit status 1"``), or None while it runs."""
        assert self.proc is not None
        code = self.proc.poll()
        return None if code is None else _status(code)

    def wait_ready(self, stopping: Callable[[], bool], timeout: float = START_TIMEOUT) -> bool:
        """Whether ``/ping`` answered before ``stopping()``; exit if the child dies first."""
        deadline = time.monotonic() + timeout
        while True:
            ended = self.exited()
            if ended is not None:
                raise SystemExit(f"{PROG}: the {self.name} failed to start ({ended})")
            try:
                verify = True if self.certificates is None else str(self.certificates.ca)
                if requests.get(self.url + "/ping", timeout=1, verify=verify).ok:
                    return True
            except requests.RequestException:
                pass
            if stopping():
                return False
            if time.monotonic() >= deadline:
                raise SystemExit(f"{PROG}: the {self.name} did not start within {timeout:.0f} s")
            time.sleep(0.1)

    def stop(self) -> None:
        """SIGTERM the child's process group (SIGKILL after 10 s).

        A child that already died may have left its worker behind: the group is signalled anyway.
        """
        if self.proc is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


def _admin_password(data_dir: Path, store: Child, stopping: Callable[[], bool],
                    timeout: float = 10.0) -> str:
    """``FPLUS_ADMIN_PASSWORD``, or the one the Config Store generated into its data dir.

    The store writes the file before it answers ``/ping``; waiting for it a little anyway
    costs nothing, and a store that never writes it is one line, not a traceback.
    """
    if os.environ.get("FPLUS_ADMIN_PASSWORD"):
        return os.environ["FPLUS_ADMIN_PASSWORD"]
    path = data_dir / "config-store" / "admin-password"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not stopping():
        try:
            password = path.read_text().strip()
        except FileNotFoundError:
            password = ""
        if password:
            return password
        ended = store.exited()
        if ended is not None:
            raise SystemExit(f"{PROG}: the {store.name} failed to start ({ended})")
        time.sleep(0.1)
    if stopping():
        return ""
    raise SystemExit(f"{PROG}: the {store.name} answers /ping but wrote no {path} "
                     "(is another one on its port?)")


@dataclass(frozen=True)
class EdgeOptions:
    """What ``up`` passes on to the Cluster Manager about edges."""

    flux_install_file: Path | None = None
    edge_sync_image: str | None = None
    air_gapped: bool = False

    def args(self) -> list[str]:
        """As ``cluster-manager serve`` arguments; SystemExit if the Flux file is missing
        (or, air-gapped, not given)."""
        out: list[str] = ["--air-gapped"] if self.air_gapped else []
        if self.air_gapped and self.flux_install_file is None:
            raise SystemExit(f"{PROG}: --air-gapped needs --flux-install-file")
        if self.flux_install_file is not None:
            if not self.flux_install_file.is_file():
                raise SystemExit(f"{PROG}: --flux-install-file {self.flux_install_file}: "
                                 "no such file")
            out += ["--flux-install-file", str(self.flux_install_file.resolve())]
        if self.edge_sync_image:
            out += ["--edge-sync-image", self.edge_sync_image]
        return out


def _certificates(data_dir: Path, addresses: Addresses) -> StackCertificates:
    """The local CA and a server certificate for every name the services are reached by."""
    hosts = [addresses.advertise.strip("[]"), addresses.local.strip("[]"), "localhost",
             "127.0.0.1"]
    try:
        return ensure_certificates(data_dir / "tls", hosts)
    except (OSError, ValueError) as exc:
        raise SystemExit(f"{PROG}: cannot make the TLS certificates in {data_dir / 'tls'}: "
                         f"{exc}") from None


def up(data_dir: Path, port: int, addresses: Addresses = Addresses(),
       edges: EdgeOptions = EdgeOptions(), tls: bool = False,
       cors: tuple[str, ...] = ()) -> None:
    """Run the stack until interrupted; SystemExit (non-zero) if it cannot start or a child
    dies. ``tls``: serve HTTPS with certificates from a local CA in ``DATA_DIR/tls``;
    ``cors``: origins every service answers CORS for."""
    data_dir = data_dir.resolve()
    names = {port: "Cluster Manager", port + 1: "Config Store", port + 2: "Git server"}
    taken = taken_ports(addresses.listen, sorted(names))
    if taken:
        message = in_use_message(addresses.listen, taken, [names[p] for p in taken])
        raise SystemExit(f"{PROG}: {message}")
    certificates = _certificates(data_dir, addresses) if tls else None
    store = Child("Config Store", "fplus.config_store.cli", port + 1,
                  ["--data-dir", str(data_dir / "config-store")], addresses=addresses,
                  certificates=certificates)
    git_args = ["--data-dir", str(data_dir / "git"), "--config-store", store.url]
    git = Child("Git server", "fplus.git_server.cli", port + 2, git_args, git_args,
                addresses=addresses, certificates=certificates)
    git.args = [*git_args, "--public-url", git.advertised_url]
    manager_args = ["--data-dir", str(data_dir / "cluster-manager"), "--config-store", store.url]
    manager = Child("Cluster Manager", "fplus.cluster_manager.cli", port, [], manager_args,
                    addresses=addresses, certificates=certificates)
    manager.args = [*manager_args, "--git", git.advertised_url,
                    "--git-repos", str(bare.repos_dir(data_dir / "git")),
                    "--secret-escrow", str(_escrow_key(data_dir / "cluster-manager")),
                    "--edge-config-store", store.advertised_url,
                    "--external-url", manager.advertised_url, *edges.args()]
    children = [store, git, manager]
    for child in children:
        child.args = [*child.args, *(arg for origin in cors for arg in ("--cors-origin", origin))]
    if addresses.loopback:
        print(f"{PROG}: edges will be given {addresses.advertise}, a loopback address: only "
              "an edge on this machine can reach it. Pass --advertise HOST (an address "
              "edges reach) to bootstrap real edges.", file=sys.stderr, flush=True)
    stop = False

    def on_signal(signum: int, frame: object) -> None:
        nonlocal stop
        stop = True

    def stopping() -> bool:
        return stop

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        if _start(children, data_dir, stopping, certificates):
            _print_walkthrough(manager.advertised_url, store.advertised_url,
                               git.advertised_url, data_dir, certificates)
        _watch(children, stopping)
    finally:
        for child in reversed(children):
            child.stop()


def _start(children: list[Child], data_dir: Path, stopping: Callable[[], bool],
           certificates: StackCertificates | None = None) -> bool:
    """Start the Config Store, seed for the others as its admin, then start them with their
    own credentials; whether all came up before a stop. With ``certificates`` every child
    trusts their CA (``FPLUS_CA_FILE``)."""
    trust = {} if certificates is None else {"FPLUS_CA_FILE": str(certificates.ca)}
    store, *others = children
    store.start(dict(os.environ) | trust)
    if not store.wait_ready(stopping):
        return False
    password = _admin_password(data_dir, store, stopping)
    own_env = {k: v for k, v in os.environ.items() if not k.startswith("FPLUS_")} | trust
    for child in others:
        if stopping():
            return False
        try:
            child.seed(dict(own_env, FPLUS_USER="admin", FPLUS_PASSWORD=password))
        except SystemExit:
            if stopping():  # Ctrl-C reached the seed step too
                return False
            raise
    for child in others:
        if stopping():
            return False
        child.start(own_env)
        if not child.wait_ready(stopping):
            return False
    return True


def _escrow_key(data_dir: Path) -> Path:
    """The stack's escrow key file (made on first start): secret escrow is on in ``up``."""
    path = data_dir / "escrow.key"
    if not path.exists():
        keyring.save(path, keyring.generate(), replace=False)
    return path


def _watch(children: list[Child], stopping: Callable[[], bool]) -> None:
    """Return once ``stopping()``; SystemExit naming the first child that exits on its own."""
    while not stopping():
        for child in children:
            ended = child.exited() if child.proc is not None else None
            if ended is not None:
                raise SystemExit(f"{PROG}: the {child.name} stopped unexpectedly ({ended}); "
                                 "stopping the others")
        time.sleep(0.5)


def _print_walkthrough(manager_url: str, store_url: str, git_url: str, data_dir: Path,
                       certificates: StackCertificates | None = None) -> None:
    secret = ("$FPLUS_ADMIN_PASSWORD" if os.environ.get("FPLUS_ADMIN_PASSWORD")
              else f"$(cat {data_dir / 'config-store' / 'admin-password'})")
    curl = "curl" if certificates is None else f"curl --cacert {certificates.ca}"
    ca_line = ("" if certificates is None else
               f"     CA            {certificates.ca}   (edges get it in bootstrap scripts)\n")
    ca_option = "" if certificates is None else f" --ca-file {certificates.ca}"
    print(f"""
Up:  Cluster Manager {manager_url}
     console       {manager_url}/ui/   (sign in as admin)
     Config Store  {store_url}   (API: {store_url}/openapi.yaml)
     Git server    {git_url}
     data          {data_dir}
{ca_line}Root principal: admin, password {secret}
Try:
  echo "{secret}" | .venv/bin/fplus login {manager_url}{ca_option} --password-stdin
  {curl} -u "admin:{secret}" {store_url}/v2/app
  {curl} -u "admin:{secret}" {git_url}/v1/status
Ctrl-C stops everything.
""", flush=True)
