"""Sealed secrets for an edge cluster: seal a value to the edge's certificate and commit it.

Each secret ``<namespace>/<name>`` is one SealedSecret at ``edo/secrets/<ns>/<name>.yaml``
in the cluster's repo; each PUT sets one key of it. The value is encrypted here, in-process,
exactly as ``kubeseal --raw`` would (see :mod:`fplus.cluster_manager.sealing`). The file is
changed with a read-modify-write edit inside the repo writer's group commit, so concurrent
PUTs of different keys to one secret all land. Plaintext never leaves this module and is
never logged.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from cryptography.hazmat.primitives.asymmetric.rsa import RSAPublicKey

from fplus.config_store.client import ConfigStoreClient, TTLCache
from fplus.git.repo import ChangeSet
from fplus.git.repo.changes import Edit
from fplus.git.store import RepoStore
from fplus.jsontypes import Doc, is_object

from ... import escrow, sealing
from ...db import DatabaseUnavailable
from ...escrow import Escrow
from ...model.apps_and_roles import STATUS_APP
from ...model.setup_status import SetupStatus
from ...model.sync_state import secret_unsealed
from ..clusters.edge_status import EdgeStatusUnreadable, read_edge_status
from ..errors import Conflict, NotFound, Unavailable, Unprocessable
from .documents import SecretDocuments
from .limits import check_document, check_value
from .sealing_keys import KeyState, SealingKeys

log = logging.getLogger(__name__)


class SecretService:
    """Seal, remove and list the secrets of commissioned clusters.

    A cluster's sealing key is its pinned key (:mod:`.sealing_keys`), never a certificate
    the edge reports that no one approved. It is remembered for ``key_ttl`` seconds after
    it was read (only successful reads), so a burst of seals does not re-read two entries
    per secret; an approved key is used from at most that long after the approval. When it
    is due again, one seal reads it while the others to that cluster wait for its answer.
    """

    def __init__(self, cs: ConfigStoreClient, repos: RepoStore, keys: SealingKeys,
                 key_ttl: float = 2.0, escrow: Escrow | None = None) -> None:
        self.cs, self.repos, self.keys = cs, repos, keys
        """The pinned sealing keys: what every seal and re-seal goes to."""
        self.escrow = escrow
        """Where seals are recorded (and, with escrow on, their values kept); None: nowhere."""
        self.reseal_problems: dict[str, str] = {}
        """Why the last re-seal of a cluster failed (set by :mod:`.reseal` on the leader)."""
        self._keys = TTLCache(key_ttl, max_items=4096)
        self._reading = threading.Lock()
        self._readers: dict[str, threading.Lock] = {}
        self.documents = SecretDocuments()
        """Secret files parsed and rendered, remembered: a burst of seals parses once."""

    def _sealing_key(self, cluster: str) -> tuple[RSAPublicKey, str]:
        """The public key to seal to and its fingerprint (checks the cluster is commissioned
        and bootstrapped)."""
        one = self._readers.get(cluster)
        if one is None:
            with self._reading:
                if len(self._readers) >= 4096:
                    self._readers.clear()  # a seal waiting on a dropped lock reads once more
                one = self._readers.setdefault(cluster, threading.Lock())
        with one:
            return self._keys.get(cluster, lambda: self._read_sealing_key(cluster))

    def _read_sealing_key(self, cluster: str) -> tuple[RSAPublicKey, str]:
        self._commissioned(cluster)
        pem = self._certificate(cluster)
        try:
            return self.keys.to_seal(cluster, pem)
        except sealing.CertificateError as exc:
            raise Unprocessable(f"the sealing certificate of cluster {cluster} is unusable: "
                                f"{exc}") from exc

    def _commissioned(self, cluster: str) -> None:
        if SetupStatus.parse(self.cs.get_config(STATUS_APP, cluster)).commit is None:
            raise NotFound(f"cluster {cluster} is unknown or has no repository yet")

    def _certificate(self, cluster: str) -> str:
        edge = read_edge_status(self.cs, cluster)
        if edge is None:
            raise NotFound(f"cluster {cluster} has not been bootstrapped: Edge Sync has not "
                           "reported its status yet; run `fplus cluster bootstrap` and the "
                           "command it prints where kubectl reaches the edge")
        pem = edge.get("kubeseal_cert")
        if not isinstance(pem, str) or not pem:
            raise Unavailable(f"cluster {cluster} has not reported its sealing certificate "
                              "yet; try again once the Sealed Secrets controller runs",
                              retry_after=30)
        return pem

    def seal(self, cluster: str, namespace: str, name: str, key: str, value: bytes, *,
             scope: str | None = None, dryrun: bool = False,
             sealed_by: str = "") -> str | None:
        """Seal ``value`` as ``key`` of ``namespace/name``; return the commit (None: dry run).
        The seal is recorded (with escrow on, the value too) once committed; a value or
        a resulting document over :mod:`.limits` is refused (413/422)."""
        path = sealing.secret_path(namespace, name)
        sealing.validate_key(key)
        check_value(value)
        scope = sealing.parse_scope(scope)
        public_key, fingerprint = self._sealing_key(cluster)
        ciphertext = sealing.encrypt_value(public_key, value, scope, namespace, name)
        if dryrun:
            return None

        def edit(old: bytes | None) -> str:
            before = self.documents.parse(old)
            after = sealing.merge_key(before, namespace, name, key, ciphertext, scope)
            check_document(before, after, f"{namespace}/{name}")
            return self.documents.render(after)

        commit = self._write(cluster, path, edit, f"Updated sealed secret {namespace}/{name}/{key}")
        if (keeper := self.escrow) is not None:
            self._recorded(lambda: keeper.record(
                cluster, namespace, name, key, scope=scope, sealed_by=sealed_by,
                fingerprint=fingerprint, value=value))
        log.info("cluster %s: sealed %s/%s key %s to %s at %s", cluster, namespace, name, key,
                 fingerprint, commit)
        return commit

    def remove(self, cluster: str, namespace: str, name: str, key: str, *,
               dryrun: bool = False) -> str | None:
        """Remove ``key`` from ``namespace/name`` (the file goes with its last key); 404 and
        nothing written when the repo holds no such key (checked in the commit itself)."""
        path = sealing.secret_path(namespace, name)
        sealing.validate_key(key)
        self._commissioned(cluster)
        if read_edge_status(self.cs, cluster) is None:
            raise NotFound(f"cluster {cluster} has not been bootstrapped: run `fplus cluster "
                           "bootstrap` and the command it prints where kubectl reaches the edge")
        if dryrun:
            held = self.repos.read_dir(cluster, sealing.manifest.SECRETS_DIR,
                                       keep=lambda p: p == path)
            _held_key(self.documents.parse(held.get(path)), namespace, name, key)
            return None

        def edit(old: bytes | None) -> str | None:
            left = sealing.remove_key(_held_key(self.documents.parse(old), namespace, name,
                                                key), key)
            return None if left is None else self.documents.render(left)

        commit = self._write(cluster, path, edit, f"Remove sealed secret {namespace}/{name}/{key}.")
        if (keeper := self.escrow) is not None:
            self._recorded(lambda: keeper.records.delete(cluster, namespace, name, key))
        log.info("cluster %s: removed %s/%s key %s at %s", cluster, namespace, name, key, commit)
        return commit

    def listing(self, cluster: str, *, unused: bool = False) -> list[dict[str, Any]]:
        """``[{namespace, name, scope, keys, unsealed, sealed}]`` of every sealed secret
        (never values); ``unsealed`` is what the edge reported: true, false or
        ``"unknown"``; ``sealed`` says per key when, by whom and to which certificate key it
        was sealed and whether it is escrowed. ``unused``: only the secrets no workload on
        the edge references (409 until the edge has reported its references)."""
        self._commissioned(cluster)
        try:
            edge = read_edge_status(self.cs, cluster)
        except EdgeStatusUnreadable:
            edge = None  # the secrets are still listed; whether they unsealed is unknown
        referenced = _references(edge) if unused else None
        if unused and referenced is None:
            raise Conflict(f"cluster {cluster} has not reported which Secrets its workloads "
                           "reference (its Edge Sync reports them with its Flux status)")
        records = self._records(cluster)
        current = self.keys.state(cluster, edge).sealed_to
        found = []
        for path, content in sorted(self.repos.read_dir(cluster, sealing.manifest.SECRETS_DIR)
                                    .items()):
            try:
                summary = _summary(self.documents.parse(content))
            except sealing.SealingError as exc:
                found.append({"path": path, "error": str(exc)})
                continue
            place = (summary["namespace"], summary["name"])
            if referenced is not None and "/".join(place) in referenced:
                continue
            summary["unsealed"] = secret_unsealed(edge, *place)
            summary["sealed"] = [{"key": k, **escrow.describe(
                records.get((*place, k)), current, summary["unsealed"])} for k in summary["keys"]]
            found.append(summary)
        return found

    def _records(self, cluster: str) -> dict[tuple[str, str, str], escrow.SealedKey]:
        if self.escrow is None:
            return {}
        try:
            rows = self.escrow.records.of_cluster(cluster)
        except DatabaseUnavailable as exc:
            raise Unavailable(escrow.unavailable(exc), retry_after=5) from exc
        return {(r.namespace, r.name, r.key): r for r in rows}

    def reseals_pending(self) -> int | None:
        """Escrowed keys (of every cluster) waiting for a re-seal to their cluster's pinned
        key; None when the database cannot be reached now."""
        if self.escrow is None:
            return 0
        try:
            return self.escrow.records.reseals_pending()
        except DatabaseUnavailable:
            return None

    def summary(self, cluster: str, keys: KeyState) -> dict[str, object] | None:
        """The status's ``secrets`` (:func:`fplus.cluster_manager.escrow.summary`) against the
        pinned key of ``keys``, with ``escrow`` saying whether values are kept and
        ``waiting`` why nothing goes to the key the edge reports; None when nothing is
        recorded."""
        if self.escrow is None:
            return None
        try:
            records = self.escrow.records.of_cluster(cluster)
        except DatabaseUnavailable:
            return {"error": "the Cluster Manager database cannot be reached"}
        found = {**escrow.summary(records, keys.sealed_to), "escrow": self.escrow.enabled}
        problem = keys.error or keys.unusable or self.reseal_problems.get(cluster)
        waiting = keys.waiting(cluster)
        return found | ({"error": problem} if problem else {}) | (
            {"waiting": waiting} if waiting else {})

    @staticmethod
    def _recorded(write: Callable[[], object]) -> None:
        """Run a records write; 503 when the database cannot be reached (the commit stands:
        the same request again records it)."""
        try:
            write()
        except DatabaseUnavailable as exc:
            raise Unavailable(escrow.unavailable(exc), retry_after=5) from exc

    def _write(self, cluster: str, path: str, edit: Edit, message: str) -> str | None:
        try:
            return self.repos.write(cluster, ChangeSet(edits={path: edit}), message).commit
        except sealing.ScopeConflict as exc:
            raise Conflict(str(exc)) from exc
        except sealing.ManifestError as exc:
            raise Conflict(f"{path} in the cluster's repo is not a SealedSecret we can change: "
                           f"{exc}") from exc


def _held_key(doc: dict[str, Any] | None, namespace: str, name: str,
              key: str) -> dict[str, Any]:
    """``doc`` if it holds ``key``; else 404 naming what is missing."""
    if doc is None:
        raise NotFound(f"no sealed secret {namespace}/{name} in the cluster's repo: nothing "
                       "removed")
    data = (doc.get("spec") or {}).get("encryptedData") or {}
    if not isinstance(data, dict) or key not in data:
        raise NotFound(f"sealed secret {namespace}/{name} has no key {key}: nothing removed")
    return doc


def _references(edge: Doc | None) -> set[str] | None:
    """The ``namespace/name`` of every Secret the edge's workloads reference, or None when it
    has not reported them (or could not list them)."""
    report = (edge or {}).get("secretRefs")
    secrets = report.get("secrets") if is_object(report) else None
    if not isinstance(secrets, list) or (is_object(report) and report.get("truncated")):
        return None
    return {s for s in secrets if isinstance(s, str)}


def _summary(doc: dict[str, Any] | None) -> dict[str, Any]:
    """``{namespace, name, scope, keys}`` of a SealedSecret file; ManifestError if it is not one."""
    if doc is None:
        raise sealing.ManifestError("the file is empty")
    keys = sealing.sealed_keys(doc)  # checks the shape: a SealedSecret with metadata and spec
    meta = doc["metadata"]
    namespace, name = meta.get("namespace"), meta.get("name")
    if not isinstance(namespace, str) or not isinstance(name, str):
        raise sealing.ManifestError("the SealedSecret has no metadata.namespace or metadata.name")
    return {"namespace": namespace, "name": name, "scope": sealing.manifest_scope(doc),
            "keys": keys}

