"""``cluster-manager serve``'s ``--tunnel-*`` options: parsed into the bounds, each bad value
refused naming its flag and what it takes."""

from __future__ import annotations

import argparse

import pytest

from fplus.cluster_manager.tunnel.bounds import MAX_BODY_BYTES
from fplus.cluster_manager.tunnel.options import add_options, options_of


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(exit_on_error=False)
    add_options(parser)
    return parser


def test_the_options_become_the_bounds_and_the_relay_address() -> None:
    args = _parser().parse_args([
        "--tunnel-max-streams-per-cluster", "7", "--tunnel-max-body-bytes", "1000",
        "--tunnel-idle-timeout", "2.5", "--tunnel-stream-bytes-per-second", "0",
        "--tunnel-relay-address", "[::1]:9000"])
    options = options_of(args)
    assert options.limits.max_streams_per_cluster == 7
    assert options.limits.max_body_bytes == 1000
    assert options.limits.idle_timeout == 2.5
    assert options.limits.stream_bytes_per_second == 0
    assert options.relay_bind == ("::1", 9000)


@pytest.mark.parametrize(("flag", "value", "says"), [
    ("--tunnel-max-streams-per-cluster", "0", "'0' is not a whole number from 1"),
    ("--tunnel-max-streams-per-principal", "-3", "'-3' is not a whole number from 1"),
    ("--tunnel-max-body-bytes", str(MAX_BODY_BYTES + 1),
     f"is not a whole number from 1 to {MAX_BODY_BYTES}"),
    ("--tunnel-stream-bytes-per-second", "1.5", "'1.5' is not a whole number from 0"),
    ("--tunnel-idle-timeout", "0", "'0' is not a positive number of seconds"),
    ("--tunnel-max-session-seconds", "inf", "'inf' is not a positive number of seconds"),
    ("--tunnel-relay-address", "nohost", "'nohost' is not HOST:PORT"),
])
def test_a_bad_value_is_refused_naming_its_flag(flag: str, value: str, says: str) -> None:
    with pytest.raises(argparse.ArgumentError) as refused:
        _parser().parse_args([flag, value])
    assert flag in str(refused.value) and says in str(refused.value)
