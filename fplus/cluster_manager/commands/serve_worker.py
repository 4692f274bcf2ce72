"""What each ``cluster-manager serve`` worker process builds for itself, after gunicorn forked
it: a Config Store client of its own, the reconciler, leader election, the API and their
caches. The master checks the configuration and the Config Store first (``cli``) and hands
over only what it read (:class:`Plan`), so a worker that died and was replaced starts from
the databases as they are, not from what the master knew at start-up.
"""

from __future__ import annotations

import atexit
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fplus.config_store.client import Access, ConfigStoreClient
from fplus.git.hosts.choose import open_store
from fplus.git.hosts.gitea import GiteaRepos
from fplus.serving import Login, Served
from fplus.serving.http.cors import enable_cors
from fplus.serving.http.gunicorn import worker_slot
from fplus.serving.startup.login import ServiceCredentials

from .._http.app import create_app
from .._http.context import ApiServices
from ..audit import AuditLog, OwnChanges
from ..changes.preview import Changes
from ..db import Database, open_database
from ..escrow import Escrow, Keyring, SealedKeys
from ..keypin import KeyPins
from ..leader import in_turn, make_elector
from ..leader.elector import LeaderStatus
from ..metrics import Metrics
from ..model.apps_and_roles import STATUS_APP
from ..model.name_claims import NameClaims
from ..model.settings import Settings
from ..model.setup_status import SetupStatus
from ..reconcile.desired_state import DesiredState
from ..reconcile.job import Env, Groups
from ..reconcile.reconciler import Reconciler
from ..reconcile.shared_repos import ensure_shared_repos
from ..rollouts.drift_counts import DriftCounts
from ..rollouts.fleet_service import FleetService, FleetStates
from ..rollouts.label_moves import label_moves
from ..rollouts.loop import RolloutLoop
from ..services.bootstrap.scripts import ScriptBuilder, reach_urls
from ..services.bootstrap.tokens import BootstrapTokens
from ..services.charts.central_imports import ImportService
from ..services.clusters.cluster_api import ClusterService
from ..services.clusters.status_view import Liveness
from ..services.fleet.phase_counts import FleetPhases
from ..services.fleet.repo_heads import RepoHeads
from ..services.fleet.rows import FleetRows
from ..services.fleet.sync_counts import FleetSync
from ..services.secrets.reseal import Resealer
from ..services.secrets.sealed_secrets import SecretService
from ..services.secrets.sealing_keys import SealingKeys
from ..tunnel.options import TunnelOptions
from ..tunnel.routing import TunnelService
from ..tunnel.table import TunnelTable


@dataclass(frozen=True)
class Plan:
    """What the master checked or read before serving, for every worker to build from."""

    settings: Settings
    login: Login
    ca_file: str | None
    keyring: Keyring | None
    groups: Groups
    """From the ServiceConfig entry, read at start-up like the command line."""
    identity: str
    """This process's leader-lease identity: gunicorn forks a new worker only once the old
    one is gone, so the new one takes over the lease at once instead of waiting it out
    (with ``serve --processes``, slot 0's worker; the others add their slot to it)."""
    reseal_interval: float
    origins: list[str]
    lease: Callable[[Database], Any]
    """The leader lease on a database (None: election off), as the master checked it."""
    gitea_token: str | None = field(default=None, repr=False)
    """The operator's Gitea token (``--git-provider gitea``; never shown)."""
    tunnel: TunnelOptions = field(default_factory=TunnelOptions)
    """The edge tunnels' bounds and this replica's relay address."""

    def for_slot(self, slot: int) -> Plan:
        """The plan of the worker process in ``slot`` (``serve --processes``): each is a
        replica of its own on the one database, with an identity of its own (slot 0 keeps
        the master's) and, when the relay port was given, that port plus its slot."""
        if slot == 0:
            return self
        relay = self.tunnel.relay_bind
        advertise = self.tunnel.relay_advertise
        if relay[1]:
            relay = (relay[0], relay[1] + slot)
        if advertise is not None:
            host, _, port = advertise.rpartition(":")
            advertise = f"{host}:{int(port) + slot}" if port.isdigit() else advertise
        return dataclasses.replace(
            self, identity=f"{self.identity}-{slot}",
            tunnel=dataclasses.replace(self.tunnel, relay_bind=relay, relay_advertise=advertise))


def build(plan: Plan) -> Served:
    """The Cluster Manager's app; it starts electing (and reconciling, once leader) when
    the worker is ready."""
    slot = worker_slot()
    plan = plan.for_slot(slot)
    settings = plan.settings
    db = open_database(settings.database)
    tokens = BootstrapTokens(db, settings.bootstrap_token_ttl)
    credentials = ServiceCredentials(plan.login, "cluster-manager")  # re-read at each login
    cs = ConfigStoreClient(settings.config_store_url.rstrip("/"), credentials=credentials,
                           login_refused=credentials.refused)
    repos = open_store(settings.git_host, plan.login.user, plan.login.password, plan.ca_file,
                       plan.gitea_token,
                       lambda cluster: SetupStatus.parse(cs.get_config(STATUS_APP, cluster)).name)
    metrics = Metrics()
    claims = NameClaims(cs)
    keys = SealingKeys(KeyPins(db))

    tunnels = TunnelService(TunnelTable(db), plan.tunnel.limits, plan.login.password,
                            plan.tunnel.relay_bind, plan.tunnel.relay_advertise)

    def forget(cluster: str) -> None:  # a deleted cluster's URLs, pinned key and tunnel
        tokens.forget(cluster)
        keys.forget(cluster)
        tunnels.forget(cluster)

    audit = AuditLog(db, settings.audit_retention_days)
    own = OwnChanges(audit, cs.whoami)  # rows of the changes made of its own accord
    env = Env(cs, settings, plan.groups, repos, DesiredState(cs), claims,
              forget_tokens=forget, phase_changed=own.phase_changed)
    reconciler = Reconciler(env, settings.workers, settings.backoff_initial,
                            settings.backoff_max, metrics,
                            on_lead=lambda stopping: ensure_shared_repos(repos, stopping))
    secrets = SecretService(cs, repos, keys, escrow=Escrow(SealedKeys(db), plan.keyring))
    resealer = Resealer(secrets, plan.reseal_interval, own)
    rollouts = RolloutLoop(cs, stale_after=settings.edge_stale_after)
    lease = plan.lease(db)
    elector = (make_elector(lease, settings, plan.identity,
                            in_turn(reconciler.start, resealer.start, rollouts.start),
                            in_turn(reconciler.stop, resealer.stop, rollouts.stop))
               if lease is not None or slot == 0 else Standby(plan.identity))
    metrics.track_leadership(elector.status)
    heads = RepoHeads(repos.head)
    repos.on_write(heads.forget)  # a commit shows in the cluster's status at once
    fleet_rows = FleetRows(cs)
    metrics.track_sync(FleetSync(cs, heads).counts)
    metrics.track_fleet(FleetStates(cs).counts)
    metrics.track_drift(DriftCounts(cs).drifted)
    phases = FleetPhases(cs)
    metrics.track_phases(phases.counts, phases.late_edges)
    metrics.track_reseals(secrets.reseals_pending)
    changes = Changes(cs, repos, settings)  # the API's checks and previews of a change
    api = ApiServices(
        cs=cs, access=Access(cs, settings.auth_cache_seconds), secrets=secrets,
        clusters=ClusterService(cs, claims, quota=settings.cluster_quota,
                                changed=fleet_rows.forget, label_moves=label_moves,
                                changes=changes),
        tokens=tokens,
        scripts=ScriptBuilder(cs, flux_install_file=settings.flux_install_file,
                              wait_timeout=settings.bootstrap_wait_timeout,
                              with_credentials=not settings.public_bootstrap,
                              rotation_grace=settings.rotation_grace,
                              edge_ca=settings.edge_ca,
                              git_reader=(repos.mint_reader
                                          if isinstance(repos, GiteaRepos) else None),
                              reach=reach_urls(settings.git_reach_url, settings.edge_store_url,
                                               settings.edge_sync_image,
                                               settings.air_gapped,
                                               settings.flux_install_file is not None)),
        metrics=metrics, external_url=settings.external_url or "",
        public_bootstrap=settings.public_bootstrap, reconciler=reconciler, leadership=elector,
        heads=heads, fleet_rows=fleet_rows, fleet=FleetService(cs, changes),
        config_store_url=settings.edge_store_url, audit=audit,
        imports=ImportService(cs, repos), tunnels=tunnels,
        liveness=Liveness(stale_after=settings.edge_stale_after,
                          offline_after=max(settings.edge_stale_after,
                                            Liveness().offline_after)))
    app = create_app(api, settings.body_limit)
    enable_cors(app, plan.origins)

    def on_start() -> None:
        tunnels.start()
        _lead_when_elected(elector, db)
    return Served(app, on_start=on_start)


class Standby:
    """Election off, in a worker process other than slot 0's (``serve --processes``): it
    serves the API and never leads; slot 0's worker, always there (a dead one is forked
    again into its slot), reconciles."""

    def __init__(self, identity: str) -> None:
        self.identity = identity

    def start(self) -> Standby:
        return self

    def status(self) -> LeaderStatus:
        return LeaderStatus(self.identity, False, None)

    def stop(self, release: bool = True) -> None:
        """Nothing to hand back."""


def _lead_when_elected(elector: Any, db: Database) -> None:
    """In the worker: elect; when the process ends, hand the lease back and close the
    database's connections."""
    elector.start()

    def shutdown() -> None:
        elector.stop()
        db.close()

    atexit.register(shutdown)
