"""A notify/v2 subscription handle and its delivery of folded updates."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ._fold import SearchFold, WatchFold

if TYPE_CHECKING:
    from .notify import NotifyClient

log = logging.getLogger(__name__)

Callback = Callable[[Any], None]


class Subscription:
    """One WATCH or SEARCH; :meth:`close` ends it."""

    def __init__(
        self,
        owner: NotifyClient,
        request: dict[str, Any],
        fold: Callable[[], WatchFold | SearchFold],
        callback: Callback,
    ) -> None:
        self._owner = owner
        self.request = request
        self._new_fold = fold
        self.fold = fold()
        self.callback = callback
        self.uuid: str | None = None
        self.status: int | None = None
        """The last subscription status (201/200; ≥ 400 once the server ended it)."""
        self.closed = False
        self.ended = False
        self._delivered = threading.Event()

    @property
    def etag(self) -> str | None:
        """For a WATCH, the etag of the last value delivered."""
        return self.fold.etag if isinstance(self.fold, WatchFold) else None

    def close(self) -> None:
        """Stop delivering and tell the server (``CLOSE``)."""
        self._owner._close_sub(self)

    def wait_initial(self, timeout: float | None = None) -> bool:
        """Wait until the first update was delivered (or the server ended the subscription)."""
        return self._delivered.wait(timeout)

    def _deliver(self, value: Any) -> None:
        if self.closed:
            return
        try:
            self.callback(value)
        except Exception:
            log.exception("notify subscription callback failed")
        finally:
            self._delivered.set()
