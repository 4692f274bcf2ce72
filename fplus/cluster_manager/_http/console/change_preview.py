"""A console change previewed before it is made. A form whose change reaches clusters' repos
posts with ``?dryRun``: the page answers what the service's dry run found (the same answer
as the API's ``?dryRun``: per cluster its refusal, the files and Edge deployments added,
changed or removed and the unified diff; the step plan) with a **Confirm** form carrying
the same values back without ``?dryRun``, which makes the change (checked again). A refused
change shows the refusal and no Confirm. A request with ``?dryRun`` writes nothing, and the
audit log leaves it out as it leaves out the API's."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from flask import request

from fplus.jsontypes import as_list, as_object

DRY_RUN = "dryRun"
SHOWN = 50
"""Clusters (and refusals) spelt out on the page; the rest counted."""


def is_dry_run() -> bool:
    """Whether this POST asks for the preview (``?dryRun``, whatever its value)."""
    return DRY_RUN in request.args


@dataclass(frozen=True)
class Preview:
    """What ``_preview.html`` shows: the dry run's ``answer``, where **Confirm** posts
    (``action``) and the form's values it carries (``fields``); ``moves``: the rollouts a
    label change moves the cluster into or out of (None: not a label change); ``link``:
    the clusters exist (a new cluster's page does not yet)."""

    answer: Mapping[str, object]
    action: str
    fields: tuple[tuple[str, str], ...]
    moves: tuple[str, ...] | None = None
    link: bool = True

    @property
    def refused(self) -> list[object]:
        return as_list(self.answer.get("refused") or [])

    @property
    def clusters(self) -> list[object]:
        return as_list(self.answer.get("clusters") or [])

    @property
    def plan(self) -> Mapping[str, object]:
        """The step plan, when it says more than "every cluster at once"."""
        plan = as_object(self.answer.get("plan") or {})
        if len(as_list(plan.get("steps") or [])) > 1 or plan.get("skipped") \
                or plan.get("waiting"):
            return plan
        return {}

    @property
    def status(self) -> int:
        """The page's status: 422 for a refused change, else 200."""
        return 422 if self.refused else 200


def preview(answer: Mapping[str, object], action: str, form: Mapping[str, str],
            names: Sequence[str], *, moves: Sequence[str] | None = None,
            link: bool = True) -> Preview:
    """The preview of ``answer``, whose Confirm posts ``form``'s fields ``names`` (those
    given) to ``action``."""
    fields = tuple((name, form[name]) for name in names if form.get(name))
    return Preview(answer, action, fields, None if moves is None else tuple(moves), link)


__all__ = ["DRY_RUN", "SHOWN", "Preview", "is_dry_run", "preview"]
