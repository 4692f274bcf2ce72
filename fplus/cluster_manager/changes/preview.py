"""A change checked on every cluster it reaches before anything is written, and the preview
``?dryRun`` answers (docs/api.md's shape): the step plan, and per cluster its refusal or what
would change there (repo files, rendered before and after from the configurations; Edge
deployment entries), as a capped unified diff.

The callers (the cluster API, cluster rollouts, fleet deployments) say which clusters a
change reaches and their configuration before and after it (:class:`Target`); this module
renders, refuses (:func:`~.refusals.refuse`) and assembles the answer."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from fplus.config_store.client import ConfigStoreClient
from fplus.git.store import RepoStore

from ..model.settings import Settings
from .central_files import CentralFiles
from .diffs import MAX_LINES, Changed, capped, changed_names, entry_text, unified
from .refusals import ClusterRefusal, Refusal
from .rendered import Inputs, Rendered, render_cluster

NO_REPO_CHANGE = object()
"""A :class:`Target`'s ``after`` when the change leaves its repo alone (a fleet deployment)."""


@dataclass(frozen=True)
class Target:
    """A cluster a change reaches: its configuration before (None: a new cluster) and after
    it, the Edge deployment entries before and after (by name), and a refusal the caller
    found itself."""

    uuid: str
    name: str | None
    before: object = None
    after: object = NO_REPO_CHANGE
    deployments_before: Mapping[str, object] = field(default_factory=dict)
    deployments_after: Mapping[str, object] = field(default_factory=dict)
    refused: Refusal | None = None


@dataclass(frozen=True)
class Plan:
    """Which clusters go in which step, and which are skipped or waited on (and why)."""

    steps: Sequence[Sequence[str]]
    skipped: Mapping[str, str] = field(default_factory=dict)
    waiting: Mapping[str, tuple[str, str | None]] = field(default_factory=dict)
    """cluster -> (why, when its next window opens)."""


@dataclass(frozen=True)
class Assessed:
    """One cluster, checked (and, for a preview, compared)."""

    target: Target
    refused: Refusal | None
    files: Changed | None = None
    deployments: Changed | None = None
    lines: Sequence[str] = ()

    def view(self, limit: int) -> dict[str, object]:
        shown: dict[str, object] = {"uuid": self.target.uuid, "name": self.target.name}
        if self.refused is not None:
            shown["refused"] = {"field": self.refused.field, "message": self.refused.message}
        diff, omitted = capped(list(self.lines), limit)
        empty = Changed([], [], [])
        return shown | {"files": (self.files or empty).view(),
                        "deployments": (self.deployments or empty).view(),
                        "diff": diff, "omitted": omitted}


class Changes:
    """Checks and previews changes (one per API worker; remembers the central repos)."""

    def __init__(self, cs: ConfigStoreClient, repos: RepoStore, settings: Settings) -> None:
        self.cs, self.repos, self.settings = cs, repos, settings
        self.central = CentralFiles()

    def inputs(self, templates: Mapping[str, object] | None = None) -> Inputs:
        """Fresh inputs for one change (``templates``: Flux templates it brings, by key)."""
        return Inputs(self.cs, self.repos, self.settings, self.central, dict(templates or {}))

    def assess(self, targets: Sequence[Target], *, compare: bool,
               inputs: Inputs | None = None) -> list[Assessed]:
        """Each target checked (its repo rendered after the change), and with ``compare``
        also what changes there (its repo rendered before too)."""
        inputs = inputs or self.inputs()
        return [self._one(inputs, target, compare) for target in targets]

    def _one(self, inputs: Inputs, target: Target, compare: bool) -> Assessed:
        refused, before, after = target.refused, Rendered({}), Rendered({})
        if target.after is not NO_REPO_CHANGE:
            after = render_cluster(inputs, target.uuid, target.after)
            refused = refused or _new(inputs, target, after.refused)
            if compare and target.before is not None and after.refused is None:
                before = render_cluster(inputs, target.uuid, target.before)
        if not compare:
            return Assessed(target, refused)
        files = changed_names(before.files, after.files) if not refused \
            else Changed([], [], [])
        old = {n: entry_text(e) for n, e in target.deployments_before.items()}
        new = {n: entry_text(e) for n, e in target.deployments_after.items()}
        deployments = changed_names(old, new)
        lines = unified({n: before.text(n) for n in (*files.changed, *files.removed)},
                        {n: after.text(n) for n in (*files.added, *files.changed)},
                        files) + unified(
            {f"deployment/{n}": t for n, t in old.items()},
            {f"deployment/{n}": t for n, t in new.items()},
            Changed(*([f"deployment/{n}" for n in names] for names in (
                deployments.added, deployments.changed, deployments.removed))))
        return Assessed(target, refused, files, deployments, lines)


def _new(inputs: Inputs, target: Target, refused: Refusal | None) -> Refusal | None:
    """``refused`` unless the configuration before the change met it already (the change
    neither causes nor mends it: a label change on a Failed cluster is no change of that)."""
    if refused is None or target.before is None:
        return refused
    return None if render_cluster(inputs, target.uuid, target.before).refused == refused \
        else refused


def refusals(assessed: Sequence[Assessed]) -> list[ClusterRefusal]:
    """The refused clusters, in order."""
    return [ClusterRefusal(a.target.uuid, a.target.name, a.refused)
            for a in assessed if a.refused is not None]


def answer(assessed: Sequence[Assessed], plan: Plan | None = None,
           limit: int | None = None) -> dict[str, object]:
    """The ``?dryRun`` answer (``plan`` None: one step of every target)."""
    names = {a.target.uuid: a.target.name for a in assessed}
    steps = plan.steps if plan is not None else [[a.target.uuid for a in assessed]]

    def named(cluster: str) -> dict[str, object]:
        return {"uuid": cluster, "name": names.get(cluster)}

    waiting = []
    for cluster, (why, opens) in sorted((plan.waiting if plan else {}).items()):
        waiting.append(named(cluster) | {"reason": why}
                       | ({"nextWindow": opens} if opens else {}))
    return {
        "dryRun": True,
        "plan": {"steps": [{"clusters": [named(c) for c in step]} for step in steps],
                 "skipped": [named(c) | {"reason": why}
                             for c, why in sorted((plan.skipped if plan else {}).items())],
                 "waiting": waiting},
        "clusters": [a.view(limit or MAX_LINES) for a in assessed],
        "refused": [r.view() for r in refusals(assessed)],
    }
