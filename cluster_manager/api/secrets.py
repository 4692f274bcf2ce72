"""Sealed secrets for an edge cluster: seal a value to the edge's certificate and commit it.

Each secret ``<namespace>/<name>`` is one SealedSecret at ``edo/secrets/<ns>/<name>.yaml``
in the cluster's repo; each PUT sets one key of it. The value is encrypted here, in-process,
exactly as ``kubeseal --raw`` would (see :mod:`cluster_manager.sealing`). The file is
changed with a read-modify-write edit inside the repo writer's group commit, so concurrent
PUTs of different keys to one secret all land. Plaintext never leaves this module and is
never logged.
"""

from __future__ import annotations

import logging
from typing import Any

from config_store.client import ConfigStoreClient, TTLCache

from .. import sealing
from ..cluster_repos import ClusterRepos
from ..gitrepo import ChangeSet
from ..setup_status import SetupStatus
from ..vocabulary import STATUS_APP
from ..yamldocs import load_documents, render_document
from .edge_status import EdgeStatusUnreadable, read_edge_status
from .errors import Conflict, NotFound, Unavailable, Unprocessable
from .sync_state import secret_unsealed

log = logging.getLogger(__name__)


class SecretService:
    """Seal, remove and list the secrets of commissioned clusters.

    A cluster's sealing key is remembered for ``key_ttl`` seconds after it was read (only
    successful reads), so a burst of seals does not re-read two entries per secret; a
    rotated certificate is used from at most that long after Edge Sync reports it.
    """

    def __init__(self, cs: ConfigStoreClient, repos: ClusterRepos, key_ttl: float = 2.0) -> None:
        self.cs, self.repos = cs, repos
        self._keys = TTLCache(key_ttl, max_items=4096)

    def _sealing_key(self, cluster: str) -> Any:
        """The public key to seal to (checks the cluster is commissioned and bootstrapped)."""
        return self._keys.get(cluster, lambda: self._read_sealing_key(cluster))

    def _read_sealing_key(self, cluster: str) -> Any:
        self._commissioned(cluster)
        return self._public_key(cluster)

    def _commissioned(self, cluster: str) -> None:
        if SetupStatus.parse(self.cs.get_config(STATUS_APP, cluster)).commit is None:
            raise NotFound(f"cluster {cluster} is unknown or has no repository yet")

    def _public_key(self, cluster: str) -> Any:
        edge = read_edge_status(self.cs, cluster)
        if edge is None:
            raise NotFound(f"cluster {cluster} has not been bootstrapped: Edge Sync has not "
                           "reported its status yet")
        pem = edge.get("kubeseal_cert")
        if not isinstance(pem, str) or not pem:
            raise Unavailable(f"cluster {cluster} has not reported its sealing certificate "
                              "yet; try again once the Sealed Secrets controller runs",
                              retry_after=30)
        try:
            return sealing.load_certificate(pem)
        except sealing.CertificateError as exc:
            raise Unprocessable(f"the sealing certificate of cluster {cluster} is unusable: "
                                f"{exc}") from exc

    def seal(self, cluster: str, namespace: str, name: str, key: str, value: bytes, *,
             scope: str | None = None, dryrun: bool = False) -> str | None:
        """Seal ``value`` as ``key`` of ``namespace/name``; return the commit (None: dry run)."""
        path = sealing.secret_path(namespace, name)
        sealing.validate_key(key)
        scope = sealing.parse_scope(scope)
        ciphertext = sealing.encrypt_value(self._sealing_key(cluster), value, scope,
                                           namespace, name)
        if dryrun:
            return None

        def edit(old: bytes | None) -> str:
            return render_document(sealing.merge_key(_document(old), namespace, name, key,
                                                     ciphertext, scope))

        commit = self._write(cluster, path, edit, f"Updated sealed secret {namespace}/{name}/{key}")
        log.info("cluster %s: sealed %s/%s key %s at %s", cluster, namespace, name, key, commit)
        return commit

    def remove(self, cluster: str, namespace: str, name: str, key: str, *,
               dryrun: bool = False) -> str | None:
        """Remove ``key`` from ``namespace/name`` (the file goes with its last key)."""
        path = sealing.secret_path(namespace, name)
        sealing.validate_key(key)
        self._commissioned(cluster)
        if read_edge_status(self.cs, cluster) is None:
            raise NotFound(f"cluster {cluster} has not been bootstrapped")
        if dryrun:
            return None

        def edit(old: bytes | None) -> str | None:
            doc = sealing.remove_key(_document(old), key)
            return None if doc is None else render_document(doc)

        commit = self._write(cluster, path, edit, f"Remove sealed secret {namespace}/{name}/{key}.")
        log.info("cluster %s: removed %s/%s key %s at %s", cluster, namespace, name, key, commit)
        return commit

    def listing(self, cluster: str) -> list[dict[str, Any]]:
        """``[{namespace, name, scope, keys, unsealed}]`` of every sealed secret (never
        values); ``unsealed`` is what the edge reported: true, false or ``"unknown"``."""
        self._commissioned(cluster)
        try:
            edge = read_edge_status(self.cs, cluster)
        except EdgeStatusUnreadable:
            edge = None  # the secrets are still listed; whether they unsealed is unknown
        found = []
        for path, content in sorted(self.repos.read_dir(cluster, sealing.manifest.SECRETS_DIR)
                                    .items()):
            try:
                summary = _summary(_document(content))
            except sealing.SealingError as exc:
                found.append({"path": path, "error": str(exc)})
                continue
            summary["unsealed"] = secret_unsealed(edge, summary["namespace"], summary["name"])
            found.append(summary)
        return found

    def _write(self, cluster: str, path: str, edit: Any, message: str) -> str | None:
        try:
            return self.repos.write(cluster, ChangeSet(edits={path: edit}), message).commit
        except sealing.ScopeConflict as exc:
            raise Conflict(str(exc)) from exc
        except sealing.ManifestError as exc:
            raise Conflict(f"{path} in the cluster's repo is not a SealedSecret we can change: "
                           f"{exc}") from exc


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


def _document(content: bytes | None) -> dict[str, Any] | None:
    """The first YAML document of a secret file (None if absent or empty)."""
    if not content:
        return None
    try:
        docs = load_documents(content)
    except Exception as exc:  # unparsable YAML in the repo
        raise sealing.ManifestError(f"unparsable YAML: {exc}") from exc
    return docs[0] if docs else None
