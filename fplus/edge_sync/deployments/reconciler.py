"""Follow the deployment inputs over notify/v2 and reconcile them, one pass at a time.

Inputs (each a SEARCH): this cluster's *Edge deployment* entries (filter
``{"cluster": <uuid>}``), every *Helm chart template* and every *K8s resource template*.
Every change marks the state dirty; a single worker thread renders a plan and applies it,
so reconciles never overlap. A failed pass is retried with back-off (a newer input starts
a new pass at once), and a periodic resync repairs drift. Nothing is applied or pruned
until all three inputs are known: an input the agent cannot read counts as unknown, not
as empty, so losing read access never deletes releases.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping

from fplus.config_store.client import NotifyClient, Subscription
from fplus.config_store.uuids import App
from fplus.jsontypes import as_object, text

from ..kube import KUBE_OR_JSON_ERRORS, describe
from ..report import DeploymentsReport, FailedDeployment
from ..retry import Backoff
from . import render
from .apply import Applier

log = logging.getLogger(__name__)

INPUTS = {"deployments": App.EdgeDeployment, "charts": App.HelmChartTemplate,
          "templates": App.K8sResourceTemplate}
Entries = dict[str, object]
"""One input: the entries of an app, by object uuid."""


def deployments_status(plan: render.Plan, specs: Entries,
                       error: str | None) -> DeploymentsReport:
    """The ``deployments`` field of the Edge cluster status.

    ``releases``: the HelmReleases wanted (all applied unless ``error`` is set);
    ``failed``: deployments skipped, ``[{uuid, name?, error}]``; ``error``: why the last
    apply failed (absent once one succeeds).
    """
    failed: list[FailedDeployment] = []
    for uuid, reason in sorted(plan.failed.items()):
        item: FailedDeployment = {"uuid": uuid, "error": reason}
        name = text(as_object(specs.get(uuid)), "name")
        if name is not None:
            item["name"] = name
        failed.append(item)
    return {"releases": sorted(n for names in plan.releases.values() for n in names),
            "failed": failed, "error": error}


class DeploymentSync:
    """Owns the three subscriptions and the reconcile worker."""

    def __init__(self, notify: NotifyClient, applier: Applier, cluster_uuid: str,
                 cluster: render.ClusterInfo, report: Callable[[DeploymentsReport], None], *,
                 git_url: Callable[[], str | None] = lambda: None,
                 backoff: Backoff | None = None, resync_interval: float = 600.0,
                 settle: float = 0.2) -> None:
        self.notify = notify
        self.applier = applier
        self.cluster_uuid = cluster_uuid
        self.cluster = cluster
        self.report = report
        self.git_url = git_url
        self.backoff = backoff or Backoff()
        self.resync_interval = resync_interval
        self.settle = settle
        """Seconds to let related changes (an entry and its chart) arrive together."""
        self._lock = threading.Lock()
        self._dirty = threading.Event()
        self._inputs: dict[str, Entries | None] = dict.fromkeys(INPUTS)
        self._subs: dict[str, Subscription] = {}

    # -- inputs -----------------------------------------------------------------------
    def subscribe(self) -> None:
        """(Re)subscribe every input whose subscription is missing or was ended."""
        with self._lock:  # callbacks wait until the handle is stored
            for key, app in INPUTS.items():
                sub = self._subs.get(key)
                if sub is not None and not sub.ended:
                    continue
                if sub is not None:
                    log.warning("deployments: the %s subscription ended; subscribing again", key)
                    self._inputs[key] = None
                flt = {"cluster": self.cluster_uuid} if key == "deployments" else None
                self._subs[key] = self.notify.search(app, self._callback(key), filter=flt)

    def _callback(self, key: str) -> Callable[[Mapping[str, object]], None]:
        def update(children: Mapping[str, object]) -> None:
            with self._lock:
                sub = self._subs.get(key)
                readable = sub is None or not getattr(sub.fold, "needs_full", False)
                self._inputs[key] = dict(children) if readable else None
            if not readable:
                log.warning("deployments: no read access to %s (%s); holding every release",
                            key, INPUTS[key])
            self._dirty.set()
        return update

    def wait_initial(self, timeout: float) -> bool:
        """Wait until every input has answered once (with entries or a refusal)."""
        deadline = time.monotonic() + timeout
        with self._lock:
            subs = list(self._subs.values())
        return len(subs) == len(INPUTS) and all(
            sub.wait_initial(max(0.0, deadline - time.monotonic())) for sub in subs)

    def snapshot(self) -> dict[str, Entries] | None:
        """The three inputs, or None while any is unknown."""
        with self._lock:
            if any(value is None for value in self._inputs.values()):
                return None
            return {k: v for k, v in self._inputs.items() if v is not None}

    def close(self) -> None:
        with self._lock:
            subs, self._subs = list(self._subs.values()), {}
        for sub in subs:
            sub.close()
        self._dirty.set()

    # -- the worker -------------------------------------------------------------------
    def run(self, stop: threading.Event) -> None:
        """Reconcile on every change, on retry deadlines and on the resync timer."""
        failures = 0
        due = time.monotonic() + self.resync_interval
        while not stop.is_set():
            self._dirty.wait(max(0.0, min(due - time.monotonic(), 1.0)))
            if stop.is_set():
                return
            self.subscribe()
            if not self._dirty.is_set() and time.monotonic() < due:
                continue
            stop.wait(self.settle)
            self._dirty.clear()
            inputs = self.snapshot()
            if inputs is None:
                due = time.monotonic() + self.resync_interval
                continue
            ok = self.reconcile(inputs)
            failures = 0 if ok else failures + 1
            delay = self.backoff.delay(failures) if failures else self.resync_interval
            due = time.monotonic() + delay

    def reconcile(self, inputs: dict[str, Entries]) -> bool:
        """One pass: render, apply, report. False if the Kubernetes side failed."""
        templates = render.load_templates(inputs["templates"])
        plan = render.plan(inputs["deployments"], inputs["charts"], templates, self.cluster,
                           self.git_url)
        for uuid, reason in sorted(plan.failed.items()):
            log.error("deployment %s skipped: %s", uuid, reason)
        error = None
        try:
            result = self.applier.apply(plan)
        except KUBE_OR_JSON_ERRORS as exc:
            error = describe(exc) if not isinstance(exc, ValueError) else str(exc)
            log.warning("deployments: applying failed: %s", error)
        else:
            log.info("deployments: applied %s; deleted %s; kept %s", result.applied or "-",
                     result.deleted or "-", result.kept or "-")
        self.report(deployments_status(plan, inputs["deployments"], error))
        return error is None
