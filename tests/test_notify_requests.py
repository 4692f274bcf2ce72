"""fplus.serving.notify: the notify/v2 request protocol the Config Store and the Git
server both serve."""

from __future__ import annotations

import json
from typing import Any

import pytest

from fplus.serving.notify.protocol import (
    RequestRefused,
    dispatch,
    over_connection_cap,
    parse_request,
)
from fplus.serving.notify.wire import dumps, reply


@pytest.mark.parametrize(("message", "reason"), [
    (b'{"uuid": "a"}', "notify: requests are JSON text, not binary"),
    ("not json", "notify: request refused: "),
    ('["uuid"]', "notify: request has no uuid"),
    ('{"uuid": 7}', "notify: request has no uuid"),
])
def test_what_is_not_a_request_ends_the_connection(message: Any, reason: str) -> None:
    with pytest.raises(RequestRefused) as refused:
        parse_request(message)
    assert str(refused.value).startswith(reason)


def test_replies_are_sorted_compact_json() -> None:
    assert parse_request('{"uuid": "s1", "method": "WATCH"}') == (
        "s1", {"uuid": "s1", "method": "WATCH"})
    assert reply("s1", 410) == '{"status":410,"uuid":"s1"}'
    assert json.loads(reply("s1", 429, "full")) == {"status": 429, "uuid": "s1", "error": "full"}
    assert dumps({"b": 1, "a": [1, 2]}) == '{"a":[1,2],"b":1}'


def test_close_is_answered_here_the_rest_by_the_service() -> None:
    subs: dict[str, Any] = {"s1": object()}
    sent: list[str] = []
    opened: list[tuple[str, dict]] = []
    dispatch("s1", {"uuid": "s1", "method": "CLOSE"}, subs, sent.append,
             lambda u, r: opened.append((u, r)))
    dispatch("s2", {"uuid": "s2", "method": "WATCH"}, subs, sent.append,
             lambda u, r: opened.append((u, r)))
    assert subs == {} and sent == ['{"status":410,"uuid":"s1"}']
    assert opened == [("s2", {"uuid": "s2", "method": "WATCH"})]


def test_the_connection_cap_refuses_only_new_subscriptions() -> None:
    subs = {"a": 1, "b": 2}
    assert over_connection_cap("c", subs, 3) is None
    assert over_connection_cap("c", subs, 2) == "too many subscriptions on this connection (max 2)"
    assert over_connection_cap("a", subs, 2) is None
