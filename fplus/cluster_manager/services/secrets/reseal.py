"""Re-sealing escrowed secrets when a cluster's pinned sealing key changes.

While this replica leads, every ``interval`` seconds, every edge's reported certificate is
applied to its cluster's pin (:mod:`.sealing_keys`), then each cluster holding escrowed
values is compared with its pinned key: the escrowed keys sealed to any other key (an
approved new key, a re-bootstrapped edge, a seal made with a key cached just before the
change) are sealed again to the pinned key, all of them in one commit, and recorded as such.
A key the edge reports that no one approved is never sealed to: the re-seal waits, and the
status says why. A key whose ciphertext in the repo changed since the pass read it (a PUT or a
DELETE meanwhile) is left as that request made it. A crash between the commit and the record
only means the next pass seals them once more. A certificate that cannot be sealed to (not
RSA, expired) re-seals nothing; the status says why. One cluster that fails (an altered
database row, a secret file edited by hand) is reported in its status and never stops the
others. A cluster whose configuration is gone has its records forgotten.
"""

from __future__ import annotations

import logging
from typing import Any

from cryptography.hazmat.primitives.asymmetric.rsa import RSAPublicKey

from fplus.git.repo import ChangeSet
from fplus.git.repo.changes import Edit
from fplus.serving.background.periodic import Periodic

from ... import escrow, sealing
from ...audit import OwnChanges
from ...model.apps_and_roles import CONFIG_APP
from ..clusters.edge_status import EdgeStatusUnreadable, read_edge_status
from .sealed_secrets import SecretService

log = logging.getLogger(__name__)
INTERVAL = 10.0
Stale = list[escrow.SealedKey]


class Resealer:
    """The re-sealing loop (see the module docstring); :meth:`start` / :meth:`stop` follow
    leadership."""

    def __init__(self, secrets: SecretService, interval: float = INTERVAL,
                 audit: OwnChanges | None = None) -> None:
        """``audit``: where each re-seal's row is written (``secret.reseal``, one per key
        re-sealed, naming the Cluster Manager); None: not recorded."""
        self.secrets, self.audit = secrets, audit
        self._holding: dict[str, str] = {}
        """The unapproved key each cluster's edge reports, as last logged."""
        self._loop = Periodic("reseal", interval, self.run_once)
        self.start, self.stop = self._loop.start, self._loop.stop

    def run_once(self) -> int:
        """One pass over every cluster holding escrowed values; returns the keys re-sealed."""
        self.secrets.keys.observe_fleet(self.secrets.cs, lambda: self._loop.stopping)
        keeper = self.secrets.escrow
        if keeper is None or not keeper.enabled:
            return 0
        done = 0
        for cluster in keeper.records.clusters(escrowed=True):
            if self._loop.stopping:
                break
            try:
                done += self.reseal(cluster)
                self._clear(cluster)
            except Exception as exc:  # this cluster's problem, not the others'
                self._problem(cluster, f"re-sealing failed: {type(exc).__name__}: {exc}")
        return done

    def reseal(self, cluster: str) -> int:
        """Bring ``cluster``'s escrowed keys to its pinned key; the count."""
        keeper, cs = self.secrets.escrow, self.secrets.cs
        assert keeper is not None
        if cs.get_config(CONFIG_APP, cluster) is None:
            keeper.records.forget_cluster(cluster)
            self.secrets.keys.forget(cluster)
            log.info("cluster %s is gone: its sealed-key records and escrowed values are "
                     "forgotten", cluster)
            return 0
        try:
            edge = read_edge_status(cs, cluster)
        except EdgeStatusUnreadable:
            return 0
        pem = (edge or {}).get("kubeseal_cert")
        if not isinstance(pem, str) or not pem:
            return 0
        target = self.secrets.keys.resolve(cluster, pem)  # CertificateError: status says so
        self._held(cluster, target.pin.pending)
        fingerprint = target.fingerprint
        stale = [r for r in keeper.records.of_cluster(cluster)
                 if r.envelope is not None and r.fingerprint != fingerprint]
        if not stale:
            return 0
        commit, done = self._reseal(cluster, stale, target.key, fingerprint)
        log.info("cluster %s: the pinned sealing key %s is not the one %d escrowed keys were "
                 "sealed to (%s): re-sealed %d of them to it in %s", cluster, fingerprint,
                 len(stale), ", ".join(sorted({r.fingerprint for r in stale})), len(done),
                 commit)
        return len(done)

    def _held(self, cluster: str, pending: str | None) -> None:
        """Log once per key that the edge reports a key the re-seal does not go to."""
        if pending is not None and self._holding.get(cluster) != pending:
            log.warning("cluster %s: the edge reports the sealing key %s, which no operator "
                        "has approved: nothing is re-sealed to it", cluster, pending)
        if pending is None:
            self._holding.pop(cluster, None)
        else:
            self._holding[cluster] = pending

    def _reseal(self, cluster: str, stale: Stale, public_key: RSAPublicKey,
                fingerprint: str) -> tuple[str | None, Stale]:
        """Seal ``stale`` again, every file in one commit; each key only if the repo still
        holds the ciphertext it held when read. Records (and returns) those re-sealed."""
        keeper, repos, docs = self.secrets.escrow, self.secrets.repos, self.secrets.documents
        assert keeper is not None
        held = {path: docs.parse(content) for path, content in repos.read_dir(
            cluster, sealing.manifest.SECRETS_DIR).items()}
        by_file: dict[str, list[tuple[escrow.SealedKey, str | None, str]]] = {}
        for r in stale:
            path = sealing.secret_path(r.namespace, r.name)
            ciphertext = sealing.encrypt_value(public_key, keeper.value_of(r), r.scope,
                                               r.namespace, r.name)
            by_file.setdefault(path, []).append((r, _sealed(held.get(path), r.key), ciphertext))
        done: Stale = []

        def edit_for(keys: list[tuple[escrow.SealedKey, str | None, str]]) -> Edit:
            def edit(old: bytes | None) -> str | None:
                doc, changed = docs.parse(old), []
                for r, was, ciphertext in keys:
                    if was is not None and _sealed(doc, r.key) == was:
                        doc = sealing.merge_key(doc, r.namespace, r.name, r.key, ciphertext,
                                                r.scope)
                        changed.append(r)
                done[:] = [d for d in done if d not in changed] + changed
                return docs.render(doc) if doc is not None else None
            return edit

        change = ChangeSet(edits={path: edit_for(keys) for path, keys in by_file.items()})
        message = f"Re-seal {len(stale)} secret keys to the edge's new key {fingerprint}"
        commit = repos.write(cluster, change, message).commit
        keeper.records.resealed(done, fingerprint)
        if self.audit is not None:
            for r in done:
                self.audit.record("secret.reseal", cluster, kind="secret",
                                  name=f"{r.namespace}/{r.name}/{r.key}")
        return commit, done

    def _problem(self, cluster: str, message: str) -> None:
        if self.secrets.reseal_problems.get(cluster) != message:
            self.secrets.reseal_problems[cluster] = message
            log.warning("cluster %s: %s", cluster, message)

    def _clear(self, cluster: str) -> None:
        self.secrets.reseal_problems.pop(cluster, None)


def _sealed(doc: dict[str, Any] | None, key: str) -> str | None:
    """The ciphertext ``doc`` holds for ``key``, if any."""
    data = ((doc or {}).get("spec") or {}).get("encryptedData") or {}
    value = data.get(key) if isinstance(data, dict) else None
    return value if isinstance(value, str) else None
