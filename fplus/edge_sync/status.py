"""The single writer of this cluster's Edge cluster status entry.

Every reporter (nodes, certificate, heartbeat, deployments) hands its newest value for
its own top-level key to :class:`StatusReporter`; one writer sends whatever differs from
what the Config Store last acknowledged as one JSON merge patch. So patches are issued
strictly in order, a newer value supersedes one still waiting for a retry, keys are never
overwritten by each other (no PUT, unlike ACS's fallback), and failures back off.
"""

from __future__ import annotations

import copy
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Unpack

from fplus.config_store.client import ConfigStoreClient, ConfigStoreError, Unprocessable
from fplus.config_store.uuids import App

from .report import EdgeClusterStatus
from .retry import Backoff

log = logging.getLogger(__name__)

STATUS_APP = App.EdgeClusterStatus


def utc_now() -> str:
    """The current time as RFC 3339 UTC with a ``Z`` (``lastSeen``)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")[:-4] + "Z"


@dataclass(frozen=True)
class FlushResult:
    """What one :meth:`StatusReporter.flush` did."""

    sent: tuple[str, ...]
    """Keys written (empty: nothing was due, or the write failed)."""
    ok: bool
    seconds: float
    """Duration of the HTTP write(s); 0 when nothing was sent."""
    error: str | None = None


class StatusReporter:
    """Merge-patches ``Edge cluster status/<cluster>`` with the newest value of each key.

    :meth:`update` never blocks on the network; :meth:`run` (a thread) or :meth:`flush`
    (a caller that schedules writes itself) does the writing.
    """

    def __init__(self, cs: ConfigStoreClient, cluster: str, *, backoff: Backoff | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.cs = cs
        self.cluster = cluster
        self.backoff = backoff or Backoff()
        self._clock = clock
        self._cond = threading.Condition()
        self._desired: dict[str, object] = {}
        self._acked: dict[str, object] = {}
        self._failures = 0
        self._not_before = 0.0
        self.last_error: str | None = None

    def update(self, **values: Unpack[EdgeClusterStatus]) -> None:
        """Set the newest value of top-level keys (deep-copied) and wake the writer."""
        with self._cond:
            for key, value in values.items():
                self._desired[key] = copy.deepcopy(value)
            self._cond.notify_all()

    def pending(self) -> dict[str, object]:
        """The keys whose newest value the Config Store has not acknowledged yet."""
        with self._cond:
            return {k: v for k, v in self._desired.items()
                    if k not in self._acked or self._acked[k] != v}

    @property
    def failures(self) -> int:
        """Consecutive failed writes (0 after a success)."""
        return self._failures

    def retry_in(self) -> float:
        """Seconds the writer still waits after a failure before writing again (0: none)."""
        with self._cond:
            return max(0.0, self._not_before - self._clock())

    def flush(self) -> FlushResult:
        """Write what is pending now, ignoring back-off; at most two requests.

        A 422 (the status schema refuses a value) would repeat for ever, so the keys are
        then written one by one and refused ones are dropped (logged as errors) until
        their value changes.
        """
        patch = self.pending()
        if not patch:
            return FlushResult((), True, 0.0)
        start = time.perf_counter()
        try:
            self.cs.patch_config(STATUS_APP, self.cluster, patch)
        except Unprocessable as exc:
            if len(patch) == 1:
                self._drop(patch, exc)
                return self._done(patch, start)
            return self._one_by_one(patch, start)
        except ConfigStoreError as exc:
            return self._failed(exc, start)
        self._acknowledge(patch)
        return self._done(patch, start)

    def _one_by_one(self, patch: dict[str, object], start: float) -> FlushResult:
        for key, value in patch.items():
            try:
                self.cs.patch_config(STATUS_APP, self.cluster, {key: value})
            except Unprocessable as exc:
                self._drop({key: value}, exc)
            except ConfigStoreError as exc:
                return self._failed(exc, start)
            else:
                self._acknowledge({key: value})
        return self._done(patch, start)

    def _acknowledge(self, patch: dict[str, object]) -> None:
        with self._cond:
            self._acked.update(patch)

    def _drop(self, patch: dict[str, object], exc: ConfigStoreError) -> None:
        log.error("status: the Config Store refuses %s: %s", ", ".join(patch), exc)
        self._acknowledge(patch)  # not retried until the value changes

    def _done(self, patch: dict[str, object], start: float) -> FlushResult:
        with self._cond:
            self._failures = 0
            self._not_before = 0.0
        if self.last_error is not None:
            log.info("status: writing works again")
        self.last_error = None
        return FlushResult(tuple(patch), True, time.perf_counter() - start)

    def _failed(self, exc: ConfigStoreError, start: float) -> FlushResult:
        with self._cond:
            self._failures += 1
            delay = self.backoff.after(self._failures, exc.retry_after)
            self._not_before = self._clock() + delay
        message = str(exc)
        if message != self.last_error:
            log.warning("status: writing %s failed (%s); retrying in %.1f s",
                        STATUS_APP, message, delay)
        self.last_error = message
        return FlushResult((), False, time.perf_counter() - start, message)

    def run(self, stop: threading.Event) -> None:
        """Write whenever something is pending and no back-off is running, until ``stop``."""
        while not stop.is_set():
            with self._cond:
                wait = self._wait_time()
                if wait is None or wait > 0:
                    self._cond.wait(timeout=min(wait, 1.0) if wait is not None else 1.0)
                    continue
            self.flush()

    def _wait_time(self) -> float | None:
        """Seconds until a write is due; None when nothing is pending. Lock held."""
        if not any(k not in self._acked or self._acked[k] != v
                   for k, v in self._desired.items()):
            return None
        return max(0.0, self._not_before - self._clock())

    def wake(self) -> None:
        """Wake the writer (e.g. at shutdown)."""
        with self._cond:
            self._cond.notify_all()
