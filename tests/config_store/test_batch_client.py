"""``ConfigStoreClient.batch`` over a scripted transport (no server): the request it sends
for each operation builder, the results it returns, and the error it raises for a failed
batch (the failing operation's own, with ``index``) or a batch refused as a whole."""

from __future__ import annotations

from typing import Any

import pytest

from fplus.config_store.client import (
    BadRequest,
    ConfigStoreClient,
    ConfigStoreError,
    MockTransport,
    NotFound,
    PreconditionFailed,
    batch,
    reply,
)

APP = "11111111-1111-4111-8111-111111111111"
OBJ = "22222222-2222-4222-8222-222222222222"
KLASS = "33333333-3333-4333-8333-333333333333"
ENTRY = f"/v2/app/{APP}/object/{OBJ}"


def _client(*answers: Any) -> tuple[ConfigStoreClient, MockTransport]:
    mock = MockTransport()
    mock.route("POST", "/v2/batch", *answers)
    return ConfigStoreClient("http://cs.test", token="t", send=mock, backoff=0), mock


def test_builders_send_the_single_calls_requests() -> None:
    ops = [batch.get_config(APP, OBJ), batch.get_config(APP, OBJ, absent_ok=False),
           batch.put_config(APP, OBJ, {"a": 1}, if_none_match="*"),
           batch.put_config(APP, OBJ, 0, if_match="e1"),
           batch.patch_config(APP, OBJ, {"b": None}, if_match='"e2"'),
           batch.delete_config(APP, OBJ), batch.delete_config(APP, OBJ, if_match="e3"),
           batch.create_object(KLASS, OBJ), batch.delete_object(OBJ),
           batch.add_member(KLASS, OBJ), batch.remove_member(KLASS, OBJ, absent_ok=False),
           batch.add_subclass(KLASS, OBJ), batch.remove_subclass(KLASS, OBJ),
           batch.create_principal("edge", label="Edge", groups=[KLASS],
                                  grants=[{"permission": APP, "target": OBJ}]),
           batch.delete_principal(OBJ), batch.find_principal("edge"),
           batch.find_principal("edge@EXAMPLE.COM"), batch.generate_password(OBJ),
           batch.generate_password(OBJ, previous_valid_for=0)]
    assert [op.wire() for op in ops] == [
        {"method": "GET", "path": ENTRY, "accept": [404]},
        {"method": "GET", "path": ENTRY},
        {"method": "PUT", "path": ENTRY, "body": {"a": 1}, "headers": {"If-None-Match": "*"}},
        {"method": "PUT", "path": ENTRY, "body": 0, "headers": {"If-Match": '"e1"'}},
        {"method": "PATCH", "path": ENTRY, "body": {"b": None}, "headers": {"If-Match": '"e2"'}},
        {"method": "DELETE", "path": ENTRY, "accept": [404]},
        {"method": "DELETE", "path": ENTRY, "headers": {"If-Match": '"e3"'}},
        {"method": "POST", "path": "/v2/object", "body": {"class": KLASS, "uuid": OBJ}},
        {"method": "DELETE", "path": f"/v2/object/{OBJ}", "accept": [404]},
        {"method": "PUT", "path": f"/v2/class/{KLASS}/direct/member/{OBJ}"},
        {"method": "DELETE", "path": f"/v2/class/{KLASS}/direct/member/{OBJ}"},
        {"method": "PUT", "path": f"/v2/class/{KLASS}/direct/subclass/{OBJ}"},
        {"method": "DELETE", "path": f"/v2/class/{KLASS}/direct/subclass/{OBJ}",
         "accept": [404]},
        {"method": "POST", "path": "/v2/principal",
         "body": {"name": "edge", "label": "Edge", "groups": [KLASS],
                  "grants": [{"plural": False, "permission": APP, "target": OBJ}]}},
        {"method": "DELETE", "path": f"/v2/principal/{OBJ}", "accept": [404]},
        {"method": "GET", "path": "/v2/identity/login/edge", "accept": [404]},
        {"method": "GET", "path": "/v2/identity/kerberos/edge@EXAMPLE.COM", "accept": [404]},
        {"method": "POST", "path": f"/v2/principal/{OBJ}/password"},
        {"method": "POST", "path": f"/v2/principal/{OBJ}/password",
         "body": {"previousValidFor": 0}}]
    # a null merge patch deletes the entry, as ConfigStoreClient.patch_config does
    assert batch.patch_config(APP, OBJ, None).wire() == \
        {"method": "DELETE", "path": ENTRY, "accept": [404]}


def test_results_come_back_in_order_with_unquoted_etags() -> None:
    cs, mock = _client(reply(200, {"results": [
        {"status": 201, "etag": '"e1"', "body": None},
        {"status": 200, "etag": '"e1"', "body": {"a": 1}},
        {"status": 404, "body": {"error": "no such entry"}}]}))
    results = cs.batch([batch.put_config(APP, OBJ, {"a": 1}), batch.get_config(APP, OBJ),
                        batch.get_config(APP, OBJ)])
    assert [(r.status, r.etag, r.body) for r in results] == [
        (201, "e1", None), (200, "e1", {"a": 1}), (404, None, {"error": "no such entry"})]
    (sent,) = mock.calls("POST", "/v2/batch")
    assert sent.json()["operations"][0] == {"method": "PUT", "path": ENTRY, "body": {"a": 1}}
    assert cs.batch([]) == [] and len(mock.requests) == 1  # nothing to send


@pytest.mark.parametrize(("status", "error"), [(412, PreconditionFailed), (404, NotFound)])
def test_a_failed_operation_raises_its_own_error_with_its_index(
        status: int, error: type[ConfigStoreError]) -> None:
    failing = {"status": status, "body": {"error": "If-Match failed"}}
    cs, _ = _client(reply(status, {"error": "operation 1 failed", "failed": 1,
                                   "results": [{"status": 204, "body": None}, failing]}))
    with pytest.raises(error) as raised:
        cs.batch([batch.put_config(APP, OBJ, 1), batch.put_config(APP, OBJ, 2, if_match="x")])
    assert raised.value.index == 1
    assert raised.value.body == {"error": "If-Match failed"}
    assert "operation 1 (PUT" in str(raised.value)


def test_a_batch_refused_whole_raises_without_an_index() -> None:
    cs, _ = _client(reply(400, {"error": "operations[0].method must be one of ..."}))
    with pytest.raises(BadRequest) as raised:
        cs.batch([batch.get_config(APP, OBJ)])
    assert raised.value.index is None


def test_a_503_is_sent_again_and_an_answer_without_results_refused() -> None:
    cs, mock = _client(reply(503, {"error": "database unavailable"}),
                       reply(200, {"results": [{"status": 201, "body": None}]}))
    assert [r.status for r in cs.batch([batch.put_config(APP, OBJ, 1)])] == [201]
    assert len(mock.calls("POST", "/v2/batch")) == 2  # rolled back: safe to send again
    cs, _ = _client(reply(200, {"results": []}))
    with pytest.raises(ConfigStoreError, match="no results"):
        cs.batch([batch.put_config(APP, OBJ, 1)])


class _StandIn:
    """An in-memory stand-in for the client, as a test's fake is (entries and objects)."""

    def __init__(self) -> None:
        self.entries: dict[tuple[str, str], Any] = {}
        self.objects: list[str] = []

    def get_config(self, app: str, obj: str) -> Any:
        return self.entries.get((app, obj))

    def put_config(self, app: str, obj: str, value: Any, *,
                   if_none_match: str | None = None) -> str:
        if if_none_match == "*" and (app, obj) in self.entries:
            raise PreconditionFailed(412, {"error": "If-None-Match failed"})
        self.entries[(app, obj)] = value
        return f"etag-{len(self.entries)}"

    def delete_config(self, app: str, obj: str) -> None:
        if self.entries.pop((app, obj), None) is None:
            raise NotFound(404, {"error": "no such entry"})

    def create_object(self, klass: str, uuid: str | None = None) -> str:
        self.objects.append(uuid or KLASS)
        return self.objects[-1]

    def find_principal(self, name: str) -> str | None:
        return OBJ if name == "edge" else None

    def generate_password(self, principal: str, *,
                          previous_valid_for: float | None = None) -> str:
        return f"pw-{principal}-{previous_valid_for}"


def test_a_stand_in_replays_a_batch_as_its_single_calls() -> None:
    fake = _StandIn()
    results = batch.replay(fake, [
        batch.create_object(KLASS, OBJ), batch.put_config(APP, OBJ, {"a": 1}),
        batch.get_config(APP, OBJ), batch.get_config(APP, KLASS),
        batch.delete_config(APP, KLASS)])
    assert [(r.status, r.etag, r.body) for r in results] == [
        (200, None, {"uuid": OBJ}), (204, "etag-1", None), (200, None, {"a": 1}),
        (404, None, None), (404, None, {"error": "no such entry"})]
    found = batch.replay(fake, [batch.find_principal("edge"), batch.find_principal("other"),
                                batch.generate_password(OBJ, previous_valid_for=5)])
    assert [(r.status, r.body) for r in found] == [
        (200, OBJ), (404, None), (200, {"password": f"pw-{OBJ}-5"})]
    with pytest.raises(PreconditionFailed) as failed:
        batch.replay(fake, [batch.get_config(APP, OBJ),
                            batch.put_config(APP, OBJ, 2, if_none_match="*")])
    assert failed.value.index == 1
    with pytest.raises(NotFound) as missing:
        batch.replay(fake, [batch.get_config(APP, KLASS, absent_ok=False)])
    assert missing.value.index == 0
