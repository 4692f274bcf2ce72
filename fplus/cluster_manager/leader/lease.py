"""What the elector needs of a lease: take or renew it, give it back, and whose it is."""

from __future__ import annotations

import os
import secrets
import socket
from typing import Protocol


class Lease(Protocol):
    """A named lease held by at most one identity at a time, for ``duration`` seconds after
    its holder last renewed it."""

    duration: float

    def acquire(self, identity: str) -> str | None:
        """Take the lease if it is free or expired, or renew it if ``identity`` holds it, by
        compare-and-swap; return its holder afterwards (``identity`` when taken or renewed,
        None when nobody holds it). Raises when the lease cannot be reached."""
        ...

    def release(self, identity: str) -> None:
        """Give the lease up at once if ``identity`` holds it (a clean shutdown)."""
        ...


def new_identity() -> str:
    """This process's identity as a lease holder: host name, PID and a random part (a
    restarted process with a reused PID is someone else)."""
    return f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(3)}"
