"""Why a change cannot work on a cluster, and the 422 that refuses it: each refusal names the
cluster (uuid and name), the field and what to do; nothing is written."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from fplus.serving.http.httperror import HttpError

from ..model.cluster_config import InvalidConfig
from .rendering import TemplateMissing

SHOWN = 3
"""Refusals spelt out in the 422's message; the body lists them all."""


@dataclass(frozen=True)
class Refusal:
    """One cluster's refusal: the field of its configuration (or of the change) and why."""

    field: str
    message: str


def refusal_of(exc: ValueError, field: str = "fluxTemplate") -> Refusal:
    """The refusal ``exc`` says (its own field if it names one, else ``field``: what a
    template that does not render is about)."""
    named = exc.field if isinstance(exc, InvalidConfig | TemplateMissing) else ""
    return Refusal(named or field, str(exc))


@dataclass(frozen=True)
class ClusterRefusal:
    """A refusal on one cluster."""

    uuid: str
    name: str | None
    refusal: Refusal

    def view(self) -> dict[str, object]:
        return {"uuid": self.uuid, "name": self.name, "field": self.refusal.field,
                "message": self.refusal.message}


class ChangeRefused(HttpError):
    """422: the change cannot work on the clusters named; nothing was written."""

    status = 422

    def __init__(self, refused: Sequence[ClusterRefusal]) -> None:
        shown = "; ".join(f"cluster {r.name or '?'} ({r.uuid}): {r.refusal.field}: "
                          f"{r.refusal.message}" for r in refused[:SHOWN])
        more = f"; and {len(refused) - SHOWN} more" if len(refused) > SHOWN else ""
        message = f"{shown}{more}; nothing was written"
        super().__init__(message, {"error": message,
                                   "refused": [r.view() for r in refused]})


def refuse(refused: Sequence[ClusterRefusal]) -> None:
    """Raise :class:`ChangeRefused` if anything is refused."""
    if refused:
        raise ChangeRefused(refused)
