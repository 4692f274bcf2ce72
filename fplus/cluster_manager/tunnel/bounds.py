"""The bounds on what crosses a tunnel, each a documented setting named in its refusal."""

from __future__ import annotations

from dataclasses import dataclass

MAX_BODY_BYTES = 64 * 1024 * 1024
"""The most ``--tunnel-max-body-bytes`` may be: what the proxy's door reads before its route."""


@dataclass(frozen=True)
class TunnelLimits:
    """``cluster-manager serve --tunnel-*`` (docs/configuration.md#edge-tunnels)."""

    max_streams_per_cluster: int = 64
    """Requests open at once on one cluster's tunnel (``--tunnel-max-streams-per-cluster``)."""
    max_streams_per_principal: int = 16
    """Requests one principal has open at once on one cluster's tunnel
    (``--tunnel-max-streams-per-principal``)."""
    max_body_bytes: int = 16 * 1024 * 1024
    """A request body's size (``--tunnel-max-body-bytes``)."""
    idle_timeout: float = 600.0
    """Seconds a request may move no byte either way (``--tunnel-idle-timeout``)."""
    max_session_seconds: float = 14400.0
    """Seconds a request (a watch, ``exec``, ``port-forward``) may last in all
    (``--tunnel-max-session-seconds``)."""
    stream_bytes_per_second: int = 0
    """Bytes per second one request's answer may move (0: unlimited;
    ``--tunnel-stream-bytes-per-second``)."""


class Refused(Exception):
    """A request the tunnel will not carry: ``status`` (429, 413, 408, 503) and why."""

    def __init__(self, status: int, message: str, setting: str | None = None,
                 retry_after: int | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.setting = status, message, setting
        self.retry_after = retry_after

    def body(self) -> dict[str, object]:
        """The JSON answer."""
        found: dict[str, object] = {"error": self.message}
        if self.setting:
            found["setting"] = self.setting
        return found


def too_many(what: str, setting: str, limit: int) -> Refused:
    """429: ``limit`` requests of ``what`` are open already."""
    return Refused(429, f"{what} already has {limit} Kubernetes requests open "
                        f"(--{setting})", setting, retry_after=1)
