"""The Edge cluster status entry Edge Sync writes, key by key (the status schema's shapes).

Each reporter builds its key's value as one of these; :class:`EdgeClusterStatus` names every
top-level key, so :meth:`~fplus.edge_sync.status.StatusReporter.update` takes only those.
A key whose value is None in a report is sent as a JSON null, which the merge patch turns
into "remove the earlier value".
"""

from __future__ import annotations

from typing import Literal, NotRequired, TypedDict

Readiness = Literal["True", "False", "Unknown"]


class Host(TypedDict):
    """One Kubernetes node (``hosts[]``)."""

    hostname: str
    arch: str
    k8s_version: str
    control_plane: bool
    os_version: str
    ready: bool
    specialised: NotRequired[str]
    """The node's specialised taint's value, only when it carries the taint."""


class FluxObject(TypedDict):
    """One Flux (or Sealed Secrets) object's readiness (``flux.objects[]``)."""

    kind: str
    namespace: str
    name: str
    ready: Readiness
    reason: NotRequired[str]
    message: NotRequired[str]
    since: NotRequired[str]
    revision: NotRequired[str]
    drifted: NotRequired[bool]
    """A HelmRelease helm-controller found changed on the edge (only ever True)."""


class FluxReport(TypedDict):
    """``flux``: the first objects in order and counts over all of them."""

    objects: list[FluxObject]
    total: int
    ready: int
    failed: int
    progressing: int
    error: str | None


class SecretRefs(TypedDict):
    """``secretRefs``: the Secrets the Pods reference (``secrets`` None: unknown)."""

    secrets: list[str] | None
    truncated: bool
    at: str
    error: str | None


class FailedDeployment(TypedDict):
    """A deployment that could not be rendered (``deployments.failed[]``)."""

    uuid: str
    error: str
    name: NotRequired[str]


class DeploymentsReport(TypedDict):
    """``deployments``: the HelmReleases wanted, the deployments skipped, the apply error."""

    releases: list[str]
    failed: list[FailedDeployment]
    error: str | None


class EdgeClusterStatus(TypedDict, total=False):
    """The entry's keys Edge Sync writes, each by one reporter."""

    lastSeen: str
    version: str
    hosts: list[Host]
    kubeseal_cert: str
    flux: FluxReport
    appliedCommit: str
    secretRefs: SecretRefs
    deployments: DeploymentsReport
