"""Status codes aligned with upstream ACS where ours used to differ (each case cites the
upstream file it follows)."""

from __future__ import annotations

import uuid

from harness.servers import Api
from tests.conftest import make_user


def test_acl_of_a_uuid_that_is_no_principal_is_404(admin: Api) -> None:
    # acs-auth lib/api_v2.js _get_acl: `if (!acl) fail(404)`; acl_for is empty unless the
    # uuid is a member of the Principal class (lib/dataflow.js _acl_for)
    r = admin.get(f"/v2/acl/{uuid.uuid4()}")
    assert r.status_code == 404 and "is not a principal" in r.json()["error"]
    app = admin.post("/v2/object", json={"class": "d319bd87-f42b-4b66-be4f-f82ff48b93f0"})
    assert app.status_code == 201  # an object that exists, in another class
    assert admin.get(f"/v2/acl/{app.json()['uuid']}").status_code == 404
    who, _ = make_user(admin)
    assert admin.get(f"/v2/acl/{who}").status_code == 200  # a principal: its ACL ([] here)


def test_v1_load_takes_only_v1_dumps(admin: Api) -> None:
    # acs-configdb lib/api-v1.js dump_load: `dump?.version != 1` → 422 before anything else;
    # a v1 dump then goes to /load, which checks permissions (403)
    for body in ({"service": "af15f175-78a0-4e05-97c0-2a0bb82b9f3b", "version": 2}, [1], {}):
        r = admin.post("/v1/load", json=body)
        assert r.status_code == 422, (body, r.text)
    _, nobody = make_user(admin)
    v1 = {"service": "af15f175-78a0-4e05-97c0-2a0bb82b9f3b", "version": 1, "classes": []}
    assert nobody.post("/v1/load", json={"version": 2}).status_code == 422
    assert nobody.post("/v1/load", json=v1).status_code == 403
    refused = admin.post("/v1/load", json=v1)  # loading v1 dumps is not supported here
    assert refused.status_code == 422 and "convert it to version 2" in refused.json()["error"]
