"""The two kinds of rollout behind one engine: what a kind follows, and one pass of it.

A *kind* (:class:`RolloutKind`) names the inputs it follows (input name -> Config Store
app) and makes a pass over a :class:`Snapshot` of them, writing through the
:class:`LoopIO` the leader's loop (:mod:`.loop`) gives it. Both kinds pace their rollouts
with :func:`.rule.advance` and keep their states in one app (:data:`.state.ROLLOUT_APP`).
A new kind (a preview, a rollback) is one more implementation, given to the loop.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple, Protocol, TypeVar

from fplus.config_store.client import ConfigStoreClient

T = TypeVar("T")


@dataclass(frozen=True)
class Snapshot:
    """A copy of every input's entries and their etags, taken together."""

    inputs: Mapping[str, dict[str, object]]
    etags: Mapping[str, dict[str, str]]


class Pass(NamedTuple):
    """How a pass went: all its writes made, and seconds until a pause ends (look again)."""

    ok: bool
    wake_in: float | None = None


class LoopIO(Protocol):
    """What the loop lends a kind for its writes."""

    @property
    def cs(self) -> ConfigStoreClient: ...

    def each(self, work: Callable[[T], bool], items: Sequence[T],
             stop: threading.Event | None) -> bool:
        """``work`` on every item, several at a time, until ``stop``; all succeeded?"""

    def seen_entry(self, key: str, uuid: str, value: object, etag: str | None = None) -> None:
        """Take an entry of input ``key`` this pass wrote (None: removed) as read."""

    def entry_etags(self, key: str) -> dict[str, str]:
        """The etags of input ``key``'s entries as last delivered or written."""

    def put_status(self, rollout: str, status: Mapping[str, object] | None) -> None:
        """Write a rollout's state (None: remove it) and take it as read; raises
        ``ConfigStoreError``."""


class RolloutKind(Protocol):
    """One kind of rollout."""

    name: str
    inputs: Mapping[str, str]
    """Input name -> the app followed (a SEARCH of each)."""
    followed_while_rolling: frozenset[str]
    """Inputs whose changes matter only while some rollout is progressing."""

    def make_pass(self, snapshot: Snapshot, io: LoopIO, stop: threading.Event) -> Pass:
        """Plan and write this kind's rollouts."""
