"""The sealing key each cluster's secrets go to: pinned, never taken from the edge unasked.

An edge proves itself once, by running the bootstrap script an operator handed over; the
first certificate it reports after that is pinned. A later certificate (new hardware, a lost
or renewed controller key, or someone holding the edge's credentials) waits as the pending
key until an operator approves it, or until a new bootstrap script is fetched and the edge
reports a key not seen before. Nothing is sealed or re-sealed to a pending key; seals go on
to the pinned one.

- :mod:`~cluster_manager.keypin.pins` — the table and the rules (:meth:`Pin.decide`).
"""

from __future__ import annotations

from .pins import ARM_REFRESH, ARM_WINDOW, BOOTSTRAP, SCHEMA, KeyPins, Pin

__all__ = ["ARM_REFRESH", "ARM_WINDOW", "BOOTSTRAP", "SCHEMA", "KeyPins", "Pin"]
