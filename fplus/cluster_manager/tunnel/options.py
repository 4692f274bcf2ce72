"""``cluster-manager serve``'s tunnel options (docs/configuration.md#edge-tunnels)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field

from fplus.serving.startup.argtypes import whole

from .bounds import MAX_BODY_BYTES, TunnelLimits


@dataclass(frozen=True)
class TunnelOptions:
    """The bounds, and where this replica takes requests relayed from the others."""

    limits: TunnelLimits = field(default_factory=TunnelLimits)
    relay_bind: tuple[str, int] = ("127.0.0.1", 0)
    relay_advertise: str | None = None


def _seconds(value: str) -> float:
    """A positive number of seconds."""
    try:
        number = float(value)
    except ValueError:
        number = -1
    if not 0 < number < float("inf"):
        raise argparse.ArgumentTypeError(f"{value!r} is not a positive number of seconds")
    return number


def _address(value: str) -> tuple[str, int]:
    host, _, port = value.rpartition(":")
    if not host or not port.isdigit() or int(port) > 65535:
        raise argparse.ArgumentTypeError(f"{value!r} is not HOST:PORT")
    return host.strip("[]"), int(port)


def add_options(parser: argparse.ArgumentParser) -> None:
    """The ``--tunnel-*`` options."""
    d = TunnelLimits()
    group = parser.add_argument_group("edge tunnels (the Kubernetes API proxy)")
    group.add_argument("--tunnel-max-streams-per-cluster", type=whole(1),
                       default=d.max_streams_per_cluster,
                       help="Kubernetes requests open at once on one cluster's tunnel (429)")
    group.add_argument("--tunnel-max-streams-per-principal", type=whole(1),
                       default=d.max_streams_per_principal,
                       help="requests one principal has open at once on one cluster's "
                            "tunnel (429)")
    group.add_argument("--tunnel-max-body-bytes", type=whole(1, MAX_BODY_BYTES),
                       default=d.max_body_bytes,
                       help=f"a request body's size (413; at most {MAX_BODY_BYTES})")
    group.add_argument("--tunnel-idle-timeout", type=_seconds,
                       default=d.idle_timeout,
                       help="seconds a request may move nothing either way (408, or cut)")
    group.add_argument("--tunnel-max-session-seconds", type=_seconds,
                       default=d.max_session_seconds,
                       help="seconds a request (a watch, exec, port-forward) may last")
    group.add_argument("--tunnel-stream-bytes-per-second", type=whole(0),
                       default=d.stream_bytes_per_second,
                       help="bytes per second one answer may move (0: unlimited)")
    group.add_argument("--tunnel-relay-address", type=_address, default=("127.0.0.1", 0),
                       metavar="HOST:PORT",
                       help="where this replica takes requests the other replicas relay to "
                            "the edges connected here (port 0: any free port)")
    group.add_argument("--tunnel-relay-advertise", metavar="HOST:PORT",
                       help="how the other replicas reach that address (default: the bound "
                            "address; in Kubernetes, the pod's IP and the port)")


def options_of(args: argparse.Namespace) -> TunnelOptions:
    """The options as parsed."""
    return TunnelOptions(
        TunnelLimits(args.tunnel_max_streams_per_cluster, args.tunnel_max_streams_per_principal,
                     args.tunnel_max_body_bytes, args.tunnel_idle_timeout,
                     args.tunnel_max_session_seconds, args.tunnel_stream_bytes_per_second),
        args.tunnel_relay_address, args.tunnel_relay_advertise)
