"""What the health gates need to know of the world at one moment (pure): which targets'
edges are offline (:meth:`GateInputs.offline`) and which targets are outside their
maintenance windows (:meth:`GateInputs.closed`). Both kinds build one per pass."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from fplus.jsontypes import Doc, is_object

from ..services.clusters.status_view import Liveness, edge_state
from .state import stamp
from .windows import Window, window_state

DEFAULT_STALE_AFTER = Liveness().stale_after


@dataclass(frozen=True)
class GateInputs:
    """The moment of a pass, the stale threshold and the maintenance windows."""

    now: datetime
    stale_after: float = DEFAULT_STALE_AFTER
    windows: Sequence[Window] = field(default_factory=tuple)

    def offline(self, targets: Iterable[str], edges: Doc) -> frozenset[str]:
        """The targets whose edges have not reported within the stale threshold (or never)."""
        liveness = Liveness(stale_after=self.stale_after,
                            offline_after=max(self.stale_after, Liveness().offline_after))
        return frozenset(
            c for c in targets
            if edge_state(found if is_object(found := edges.get(c)) else None, self.now,
                          liveness) in (None, "Stale", "Offline"))

    def closed(self, labels: Mapping[str, Mapping[str, str]]) -> dict[str, str | None]:
        """The targets outside every window matching them -> when the next one opens."""
        if not self.windows:
            return {}
        found: dict[str, str | None] = {}
        for cluster, its in labels.items():
            open_now, opens = window_state(its, self.windows, self.now)
            if not open_now:
                found[cluster] = None if opens is None else stamp(opens)
        return found
