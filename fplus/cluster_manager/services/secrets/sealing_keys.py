"""The key a cluster's secrets are sealed to: the pinned one, not whatever the edge reports.

Seals, the re-seal loop and the status all read the edge's certificate through here, and each
read applies it to the pin first (:mod:`fplus.cluster_manager.keypin`): the first certificate after
a bootstrap is pinned, a later one waits as the pending key until an operator approves it
(:meth:`SealingKeys.approve`) or a new bootstrap script is fetched (:meth:`SealingKeys.arm`).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from cryptography.hazmat.primitives.asymmetric.rsa import RSAPublicKey

from fplus.config_store.client import ConfigStoreClient
from fplus.jsontypes import Doc

from ... import sealing
from ...db import DatabaseUnavailable
from ...keypin import KeyPins, Pin
from ...model.apps_and_roles import EDGE_APP
from ..errors import Conflict, NotFound, Unavailable

log = logging.getLogger(__name__)
T = TypeVar("T")
APPROVE = "POST /v1/cluster/{cluster}/sealing-key/approve"


@dataclass(frozen=True)
class Target:
    """The key to seal to (the pinned one), and the pin it comes from."""

    key: RSAPublicKey
    fingerprint: str
    pin: Pin


@dataclass(frozen=True)
class KeyState:
    """A cluster's pin as its edge's report left it; ``unusable`` says why the reported
    certificate cannot be sealed to, ``error`` why the pin could not be read."""

    pin: Pin | None
    unusable: str | None = None
    error: str | None = None

    @property
    def sealed_to(self) -> str | None:
        """The pinned key's fingerprint: what seals and re-seals go to."""
        return self.pin.fingerprint if self.pin is not None else None

    def waiting(self, cluster: str) -> str | None:
        """Why nothing is (re-)sealed to the key the edge reports, while one is pending."""
        if self.pin is None or self.pin.pending is None:
            return None
        return (f"the edge reports the sealing key {self.pin.pending}, which no operator has "
                f"approved: nothing is sealed or re-sealed to it, seals go to the pinned key "
                f"{self.pin.fingerprint}; approve it ({APPROVE.format(cluster=cluster)}) or "
                f"bootstrap the cluster again")


def _iso(moment: float | None) -> str | None:
    return None if moment is None else time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(moment))


def _reach(operation: Callable[[], T]) -> T:
    try:
        return operation()
    except DatabaseUnavailable as exc:
        raise Unavailable(f"the Cluster Manager database cannot be reached: {exc}",
                          retry_after=5) from exc


class SealingKeys:
    """The pinned keys of every cluster (see the module docstring)."""

    def __init__(self, pins: KeyPins) -> None:
        self.pins = pins
        self._applied: dict[str, str] = {}
        """The certificate last applied per cluster by :meth:`observe_fleet`."""

    def to_seal(self, cluster: str, pem: str) -> tuple[RSAPublicKey, str]:
        """The public key to seal ``cluster``'s secrets to, and its fingerprint, once the
        edge's certificate ``pem`` is applied to the pin. :class:`sealing.CertificateError`
        when the reported certificate (or the pinned one) is unusable."""
        target = self.resolve(cluster, pem)
        return target.key, target.fingerprint

    def resolve(self, cluster: str, pem: str) -> Target:
        """As :meth:`to_seal`, with the pin as it is afterwards."""
        reported = sealing.load_certificate(pem)
        fingerprint = sealing.public_key_fingerprint(reported)
        pin = _reach(lambda: self.pins.observe(cluster, fingerprint, pem))
        if pin.fingerprint == fingerprint or pin.certificate is None:
            return Target(reported, fingerprint, pin)
        try:
            return Target(sealing.load_certificate(pin.certificate), str(pin.fingerprint), pin)
        except sealing.CertificateError as exc:
            raise sealing.CertificateError(
                f"the pinned sealing certificate ({pin.fingerprint}) is unusable: {exc}; "
                f"approve the key the edge reports ({APPROVE.format(cluster=cluster)})") \
                from None

    def observe_fleet(self, cs: ConfigStoreClient, stopping: Callable[[], bool]) -> None:
        """Apply every edge's reported certificate (one search), so a first certificate is
        pinned within one pass of its report, whether or not anything is sealed yet. A
        certificate applied before on this replica is skipped; one cluster's failure is
        logged and the others go on."""
        reports = cs.search(EDGE_APP, {}, {"cert": "kubeseal_cert"}) or {}
        for cluster, picked in reports.items():
            pem = (picked or {}).get("cert")
            if stopping() or not isinstance(pem, str) or not pem:
                continue
            if self._applied.get(cluster) == pem:
                continue
            try:
                self.resolve(cluster, pem)
            except sealing.CertificateError:
                pass  # nothing is pinned to an unusable certificate; the status says why
            except Exception as exc:
                log.warning("cluster %s: cannot apply the reported sealing certificate to its "
                            "pin: %s", cluster, getattr(exc, "message", exc))
                continue
            self._applied[cluster] = pem

    def state(self, cluster: str, edge: Doc | None) -> KeyState:
        """The pin after applying the edge's report (never raises: the status shows it)."""
        pem = (edge or {}).get("kubeseal_cert")
        try:
            if isinstance(pem, str) and pem:
                try:
                    self.to_seal(cluster, pem)
                except sealing.CertificateError as exc:
                    return KeyState(self.pins.get(cluster), unusable=f"no re-seal: {exc}")
            return KeyState(self.pins.get(cluster))
        except (Unavailable, DatabaseUnavailable):
            return KeyState(None, error="the Cluster Manager database cannot be reached")

    def approve(self, cluster: str, fingerprint: object, by: str,
                edge: Doc | None) -> Pin:
        """Pin the pending key if it is ``fingerprint`` (approved by ``by``); 409 when no key
        is pending or another one is, 404 when the cluster never reported a key."""
        pem = (edge or {}).get("kubeseal_cert")
        if isinstance(pem, str) and pem:  # the pending key is the one reported now
            with contextlib.suppress(sealing.CertificateError):  # an unusable one changes nothing
                self.to_seal(cluster, pem)
        pin = _reach(lambda: self.pins.get(cluster))
        if pin is None or pin.fingerprint is None:
            raise NotFound(f"cluster {cluster} has no pinned sealing key: its edge has not "
                           f"reported a usable certificate since it was bootstrapped")
        if pin.pending is None:
            raise Conflict(f"no sealing key of cluster {cluster} waits for approval (the "
                           f"pinned key is {pin.fingerprint})")
        if fingerprint != pin.pending:
            raise Conflict(f"the sealing key waiting for approval is {pin.pending}, not "
                           f"{fingerprint}: compare the fingerprint with the edge's "
                           f"controller and approve that one")
        if not _reach(lambda: self.pins.approve(pin, by)):
            raise Conflict(f"the sealing key of cluster {cluster} changed meanwhile; read its "
                           "status and try again")
        found = _reach(lambda: self.pins.get(cluster))
        assert found is not None
        return found

    def arm(self, cluster: str) -> None:
        """A bootstrap script was delivered: the next new key the edge reports is pinned."""
        _reach(lambda: self.pins.arm(cluster))

    def forget(self, cluster: str) -> None:
        """The cluster is gone: so is its pin."""
        self.pins.forget(cluster)

    @staticmethod
    def view(cluster: str, state: KeyState, reporter: str | None) -> dict[str, object]:
        """The status's ``sealingKey`` and (while one waits) ``pendingKey``."""
        pin = state.pin
        if state.error is not None:
            return {"sealingKey": {"error": state.error}}
        if pin is None or pin.fingerprint is None:
            return {}
        shown: dict[str, object] = {"sealingKey": {
            "fingerprint": pin.fingerprint, "pinnedAt": _iso(pin.pinned_at),
            "pinnedBy": pin.pinned_by, "bootstrapArmedAt": _iso(pin.armed_at)}}
        if pin.pending is not None:
            shown["pendingKey"] = {"fingerprint": pin.pending, "since": _iso(pin.pending_since),
                                   "reportedBy": reporter, "reason": state.waiting(cluster)}
        return shown


def approved(cluster: str, pin: Pin) -> dict[str, object]:
    """The answer to an approval."""
    return {"uuid": cluster, **SealingKeys.view(cluster, KeyState(pin), None)}
