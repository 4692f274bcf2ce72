"""Writes serialised across replicas: of many writes carrying one etag through both replicas
exactly one succeeds, read-modify-write cycles through both lose no update, and a name
claimed through both at once is created once."""

from __future__ import annotations

import json
import uuid
from functools import partial

import requests

from fplus.config_store import uuids
from harness.servers import Api
from tests.conftest import make_object

from .pair import Replicas, known_to
from .writes import at_once

MERGE = {"Content-Type": "application/merge-patch+json"}
WRITERS_PER_REPLICA = 6


def sessions(pair: Replicas, per_replica: int = WRITERS_PER_REPLICA) -> list[Api]:
    """Admin sessions, alternately on A and B, each logged in already."""
    apis = [pair.admin(i % 2) for i in range(2 * per_replica)]
    for api in apis:
        assert api.get("/v2/whoami/uuid").status_code == 200
    return apis


def etag_of(r: requests.Response) -> str:
    return r.headers["ETag"]


def merge_patch(api: Api, url: str, doc: object, if_match: str) -> requests.Response:
    """A conditional merge-PATCH."""
    return api.patch(url, data=json.dumps(doc), headers=MERGE | {"If-Match": if_match})


def one_winner(results: list[requests.Response]) -> requests.Response:
    """The only 2xx among ``results``; every other one must be 412."""
    statuses = sorted(r.status_code for r in results)
    winners = [r for r in results if r.ok]
    assert len(winners) == 1 and statuses.count(412) == len(results) - 1, statuses
    return winners[0]


def write(api: Api, url: str, doc: dict, i: int, if_match: str) -> requests.Response:
    """Writer ``i``'s conditional write of ``doc``: a PUT or a merge-PATCH."""
    if i % 4 < 2:
        return api.put(url, json=doc, headers={"If-Match": if_match})
    return merge_patch(api, url, doc, if_match)


def test_one_etag_lets_exactly_one_put_or_patch_through_across_replicas(
        pair: Replicas) -> None:
    a = pair.admin(0)
    app, obj = make_object(a, uuids.Class.App), make_object(a, uuids.Class.Device)
    known_to(pair.admin(1), app, obj)
    url = f"/v2/app/{app}/object/{obj}"
    etag = etag_of(a.put(url, json={"by": None, "round": None}))
    apis = sessions(pair)
    for n in range(8):  # each round writes new values: rewriting the same one is no change
        docs = [{"by": i, "round": n} for i in range(len(apis))]
        results = at_once([partial(write, api, url, doc, i, etag)
                           for i, (api, doc) in enumerate(zip(apis, docs, strict=True))])
        winner = one_winner(results)
        for i in (0, 1):
            r = pair.admin(i).get(url)
            assert (r.json(), etag_of(r)) == (docs[results.index(winner)], etag_of(winner))
        etag = etag_of(winner)


def test_one_registration_etag_lets_exactly_one_patch_through_across_replicas(
        pair: Replicas) -> None:
    """Registration entries are the object's own facts, checked against each replica's
    object graph: that must be as current as the database."""
    a = pair.admin(0)
    obj = make_object(a, uuids.Class.Device)
    known_to(pair.admin(1), obj)
    url = f"/v2/app/{uuids.App.Registration}/object/{obj}"
    apis = sessions(pair)
    for n in range(8):
        etag = etag_of(a.get(url))
        doc = {"deleted": n % 2 == 0}
        one_winner(at_once([partial(merge_patch, api, url, doc, etag) for api in apis]))


def test_read_if_match_retry_through_both_replicas_loses_no_increment(pair: Replicas) -> None:
    a = pair.admin(0)
    app, obj = make_object(a, uuids.Class.App), make_object(a, uuids.Class.Device)
    known_to(pair.admin(1), app, obj)
    url = f"/v2/app/{app}/object/{obj}"
    a.put(url, json={"count": 0, "by": {}})
    apis, per_writer = sessions(pair, 3), 10

    def increments(n: int) -> int:
        """``per_writer`` increments through replica n % 2; how many 412s it met."""
        api, done, conflicts = apis[n], 0, 0
        while done < per_writer:
            r = api.get(url)
            body = r.json()
            doc = {"count": body["count"] + 1, "by": {str(n): body["by"].get(str(n), 0) + 1}}
            w = merge_patch(api, url, doc, etag_of(r))
            assert w.status_code in (204, 412), w.text
            done += w.status_code == 204
            conflicts += w.status_code == 412
        return conflicts

    conflicts = at_once([partial(increments, n) for n in range(len(apis))])
    assert sum(conflicts) > 0, "the writers should have collided"
    for i in (0, 1):
        final = pair.admin(i).get(url).json()
        assert final == {"count": len(apis) * per_writer,
                         "by": {str(n): per_writer for n in range(len(apis))}}


def test_one_principal_name_claimed_at_once_through_both_replicas_is_created_once(
        pair: Replicas) -> None:
    """Names are unique across replicas too: one creation, the others find it (no 5xx)."""
    apis = sessions(pair)
    for n in range(10):
        body = {"name": f"race-{n}-{uuid.uuid4().hex[:8]}"}
        results = at_once([partial(api.post, "/v2/principal", json=body) for api in apis])
        statuses = sorted(r.status_code for r in results)
        odd = [(r.status_code, r.text) for r in results if r.status_code not in (200, 201)]
        assert statuses == [200] * (len(apis) - 1) + [201], (statuses, odd)
        assert len({r.json()["uuid"] for r in results}) == 1
