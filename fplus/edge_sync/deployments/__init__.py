"""Edge deployment entries → HelmReleases and GitRepositories on the edge.

``entry`` checks an entry and ``render`` turns entries into wanted manifests (both pure),
``apply`` brings the labelled objects in the namespace to that plan (server-side apply +
prune), ``reconciler`` follows the inputs and runs one pass at a time with retries.
"""

from __future__ import annotations

from .apply import MANAGER, Applier
from .entry import RenderError
from .reconciler import DeploymentSync
from .render import ClusterInfo, Plan, plan

__all__ = ["MANAGER", "Applier", "ClusterInfo", "DeploymentSync", "Plan", "RenderError", "plan"]
