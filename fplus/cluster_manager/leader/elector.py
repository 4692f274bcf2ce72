"""Leader election: exactly one replica reconciles; every replica serves the API.

:class:`LeaderElector` keeps trying to take the lease (every ``retry`` seconds while another
replica holds it) and, once it leads, renews it every ``renew`` seconds. It leads from a
successful take until ``duration`` seconds after the last renewal it *sent*: a leader that
cannot renew in time stops leading on its own (a watchdog, so a renewal stuck on a dead
connection cannot keep it leading), before any other replica can take the lease, and says
so in the log once. ``on_lead`` and ``on_follow`` start and stop the work only a leader
does. :class:`AlwaysLeader` is election turned off (one replica).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from .lease import Lease

log = logging.getLogger(__name__)


def check_timings(duration: float, renew: float, retry: float) -> None:
    """ValueError unless renewals and retries come more often than the lease ends."""
    if not 0 < renew < duration or not 0 < retry < duration:
        raise ValueError(f"renew ({renew:g} s) and retry ({retry:g} s) must be more than 0 "
                         f"and shorter than the lease duration ({duration:g} s)")


@dataclass(frozen=True)
class LeaderStatus:
    """This replica's role as last known."""

    identity: str
    leading: bool
    holder: str | None
    """Who holds the lease (None: nobody, or not known yet)."""
    problem: str | None = None
    """Why the lease could not be reached at the last attempt, if it could not."""

    @property
    def role(self) -> str:
        return "leader" if self.leading else "standby"


class LeaderElector:
    """Runs ``on_lead`` while this replica holds ``lease``, ``on_follow`` when it stops."""

    def __init__(self, lease: Lease, identity: str, on_lead: Callable[[], None],
                 on_follow: Callable[[], None], *, renew: float = 2.5, retry: float = 2.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        check_timings(lease.duration, renew, retry)
        self.lease, self.identity = lease, identity
        self._on_lead, self._on_follow = on_lead, on_follow
        self.renew, self.retry = renew, retry
        self._clock = clock
        self._state = threading.Lock()  # the fields below
        self._switch = threading.Lock()  # lead/follow transitions, one at a time
        self._leading = False
        self._deadline = 0.0
        self._holder: str | None = None
        self._problem: str | None = None
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def start(self) -> LeaderElector:
        """Start electing (in background threads)."""
        for target, name in ((self._run, "leader-election"), (self._watch, "leader-watchdog")):
            thread = threading.Thread(target=target, name=name, daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def status(self) -> LeaderStatus:
        """The role, the holder and any problem reaching the lease."""
        with self._state:
            return LeaderStatus(self.identity, self._leading, self._holder, self._problem)

    def stop(self, release: bool = True) -> None:
        """Stop electing; stop leading and (``release``) hand the lease back at once."""
        self._stop.set()
        for thread in self._threads:
            if thread is not threading.current_thread():
                thread.join(timeout=self.lease.duration)
        was_leading = self._follow(None)
        if release and was_leading:
            try:
                self.lease.release(self.identity)
            except Exception as exc:
                log.warning("could not hand the leader lease back: %s", exc)

    def attempt(self) -> None:
        """One try to take or renew the lease (the loop's step; tests call it directly)."""
        sent = self._clock()
        try:
            holder = self.lease.acquire(self.identity)
        except Exception as exc:
            with self._state:
                first, self._problem = self._problem is None, " ".join(str(exc).split())
                leading = self._leading
            if first:
                log.warning("cannot reach the leader lease%s: %s",
                            " (still leading until it ends)" if leading else "", self._problem)
            return
        with self._state:
            if self._problem is not None:
                log.info("the leader lease is reachable again")
            self._problem, self._holder = None, holder
            if holder == self.identity:
                self._deadline = sent + self.lease.duration
        if holder == self.identity:
            self._lead()
        else:
            self._follow(f"replica {holder} holds the leader lease" if holder else
                         "the leader lease was lost")

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.attempt()
            except Exception:  # the leader's work failed to start or stop: try again
                log.exception("leader election step failed")
            with self._state:
                pause = self.renew if self._leading else self.retry
            self._stop.wait(pause)

    def _watch(self) -> None:
        while not self._stop.is_set():
            self.check_deadline()
            with self._state:
                left = self._deadline - self._clock() if self._leading else 0.5
            self._stop.wait(min(max(left, 0.05), 0.5))

    def check_deadline(self) -> None:
        """The watchdog's step: stop leading if the lease ended without a renewal."""
        with self._state:
            ended = self._leading and self._deadline <= self._clock()
        if ended:
            self._follow("could not renew the leader lease before it ended")

    def _lead(self) -> None:
        with self._switch:
            with self._state:
                if self._leading or self._deadline <= self._clock():
                    return
                self._leading = True
            log.info("leading: this replica (%s) holds the leader lease and reconciles",
                        self.identity)
            self._on_lead()

    def _follow(self, why: str | None) -> bool:
        """Stop leading (if leading), saying ``why`` once; True if it was leading."""
        with self._switch:
            with self._state:
                if not self._leading:
                    return False
                self._leading = False
            if why:
                log.warning("stopped leading: %s; reconciling stops until this replica "
                            "holds the lease again", why)
            self._on_follow()
            return True


class AlwaysLeader:
    """Election turned off: this replica always leads (one replica only)."""

    def __init__(self, identity: str, on_lead: Callable[[], None],
                 on_follow: Callable[[], None]) -> None:
        self.identity = identity
        self._on_lead, self._on_follow = on_lead, on_follow

    def start(self) -> AlwaysLeader:
        self._on_lead()
        return self

    def status(self) -> LeaderStatus:
        return LeaderStatus(self.identity, True, self.identity)

    def stop(self, release: bool = True) -> None:
        self._on_follow()
