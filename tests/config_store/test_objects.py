"""The object model over HTTP: creation, ranks, ownership, class relations, deletion."""

from __future__ import annotations

import uuid

import pytest

from fplus.config_store import uuids
from harness.servers import Api
from tests.conftest import make_class, make_object

C = uuids.Class


def members(api: Api, klass: str, direct: bool = False) -> list[str]:
    r = api.get(f"/v2/class/{klass}/{'direct/' if direct else ''}member")
    assert r.status_code == 200, r.text
    return r.json()


def subclasses(api: Api, klass: str, direct: bool = False) -> list[str]:
    r = api.get(f"/v2/class/{klass}/{'direct/' if direct else ''}subclass")
    assert r.status_code == 200, r.text
    return r.json()


def test_create_individual_and_class(admin: Api) -> None:
    r = admin.post("/v2/object", json={"class": C.Device})
    assert r.status_code == 201
    reg = r.json()
    assert reg["rank"] == 0 and reg["class"] == C.Device and reg["deleted"] is False
    assert reg["uuid"] in members(admin, C.Device)
    assert reg["uuid"] in members(admin, C.Individual)  # Device ⊂ Individual
    klass = make_class(admin)
    assert admin.get(f"/v2/object/{klass}").json()["rank"] == 1
    assert klass in subclasses(admin, C.Individual, direct=True)
    assert klass in members(admin, C.R1Class)


def test_create_with_uuid_is_idempotent_and_undeletes(admin: Api) -> None:
    wanted = str(uuid.uuid4())
    assert admin.post("/v2/object", json={"class": C.Device, "uuid": wanted}).status_code == 201
    r = admin.post("/v2/object", json={"class": C.Device, "uuid": wanted})
    assert r.status_code == 200 and r.json()["uuid"] == wanted
    reg_url = f"/v2/app/{uuids.App.Registration}/object/{wanted}"
    admin.patch(reg_url, data='{"deleted": true}',
                headers={"Content-Type": "application/merge-patch+json"})
    r = admin.post("/v2/object", json={"class": C.Device, "uuid": wanted})
    assert r.status_code == 200 and r.json()["deleted"] is False


@pytest.mark.parametrize(("body", "status"), [
    ({}, 422),
    ({"class": C.Device, "rank": 0}, 422),
    ({"class": "0badc0de-0000-4000-8000-000000000000"}, 409),
    ({"class": uuids.App.Info}, 409),  # an individual is not a class
    ({"class": C.Device, "uuid": "NOT-A-UUID"}, 422),
    ({"class": C.Device, "owner": "0badc0de-0000-4000-8000-000000000000"}, 409),
])
def test_create_refusals(admin: Api, body: dict, status: int) -> None:
    before = set(admin.get("/v2/object").json())
    assert admin.post("/v2/object", json=body).status_code == status
    assert set(admin.get("/v2/object").json()) == before


def test_rank_roots(admin: Api) -> None:
    assert admin.get("/v2/object/rank").json() == [C.Individual, C.R1Class, C.R2Class,
                                                    C.R3Class]


def test_membership_rules(admin: Api) -> None:
    klass, other = make_class(admin), make_class(admin)
    obj = make_object(admin, C.Device)
    assert admin.put(f"/v2/class/{klass}/direct/member/{obj}").status_code == 204
    assert admin.put(f"/v2/class/{klass}/direct/member/{obj}").status_code == 204  # idempotent
    assert obj in members(admin, klass, direct=True)
    assert admin.get(f"/v2/class/{klass}/member/{obj}").status_code == 204
    assert admin.get(f"/v2/class/{other}/member/{obj}").status_code == 404
    # rank mismatch: a class cannot be a member of a rank-1 class
    assert admin.put(f"/v2/class/{klass}/direct/member/{other}").status_code == 409
    # the primary class cannot be removed
    assert admin.delete(f"/v2/class/{C.Device}/direct/member/{obj}").status_code == 409
    assert admin.delete(f"/v2/class/{klass}/direct/member/{obj}").status_code == 204
    assert obj not in members(admin, klass)


def test_subclass_rules_and_transitive_membership(admin: Api) -> None:
    top, mid = make_class(admin), make_class(admin)
    obj = make_object(admin, mid)
    assert admin.put(f"/v2/class/{top}/direct/subclass/{mid}").status_code == 204
    # Individual -> mid is now implied via top, so the direct link was dropped
    assert mid not in subclasses(admin, C.Individual, direct=True)
    assert mid in subclasses(admin, C.Individual)
    assert obj in members(admin, top)
    assert admin.get(f"/v2/class/{top}").json() == {"members": [obj],
                                                    "subclasses": sorted([top, mid])}
    assert admin.put(f"/v2/class/{mid}/direct/subclass/{top}").status_code == 409  # cycle
    assert admin.put(f"/v2/class/{top}/direct/subclass/{obj}").status_code == 409  # individual
    assert admin.delete(f"/v2/class/{top}/direct/subclass/{mid}").status_code == 204
    assert mid in subclasses(admin, C.Individual, direct=True)  # rank root re-added
    assert obj not in members(admin, top)


def test_delete_object(admin: Api, new_app: str) -> None:
    klass = make_class(admin)
    member = make_object(admin, klass)
    r = admin.delete(f"/v2/object/{klass}")
    assert r.status_code == 409 and r.json() == [member]
    admin.put(f"/v2/app/{new_app}/object/{member}", json={"x": 1})
    r = admin.delete(f"/v2/object/{new_app}")
    assert r.status_code == 409 and r.json() == [member]
    assert admin.delete(f"/v2/object/{member}").status_code == 204
    assert admin.get(f"/v2/app/{new_app}/object/{member}").status_code == 404
    assert admin.delete(f"/v2/object/{member}").status_code == 404
    assert admin.delete(f"/v2/object/{klass}").status_code == 204


@pytest.mark.parametrize("immutable", [C.App, C.R1Class, uuids.App.Registration, uuids.NULL,
                                       uuids.App.ConfigSchema, uuids.Special.Unowned])
def test_immutable_objects(admin: Api, immutable: str) -> None:
    assert admin.delete(f"/v2/object/{immutable}").status_code == 405
    assert admin.get(f"/v2/object/{immutable}").status_code == 200


def test_seeded_apps_and_names(admin: Api) -> None:
    apps = admin.get("/v2/app").json()
    assert {uuids.App.Registration, uuids.App.Info, uuids.App.ConfigSchema} <= set(apps)
    info = admin.get(f"/v2/app/{uuids.App.Info}/object/{C.App}").json()
    assert info == {"name": "Application"}
    assert C.App in admin.get("/v2/class").json()


def test_seeded_kube_permissions(admin: Api) -> None:
    """The three levels of the edge Kubernetes proxy are Cluster Manager permissions in every
    Config Store from its first start, grantable like the others."""
    kube = {uuids.EdgePerm.KubeView: "View the Kubernetes API",
            uuids.EdgePerm.KubeEdit: "Edit through the Kubernetes API",
            uuids.EdgePerm.KubeAdmin: "Administer through the Kubernetes API"}
    assert len(set(kube)) == 3
    assert set(kube) <= set(members(admin, uuids.EdgePerm.All, direct=True))
    assert set(kube) <= set(members(admin, C.Permission))
    for perm, name in kube.items():
        assert admin.get(f"/v2/app/{uuids.App.Info}/object/{perm}").json() == {"name": name}


def test_save_is_refused(admin: Api) -> None:
    assert admin.get("/v2/save").status_code == 403
    assert admin.get("/v1/save").status_code == 403


def test_ping_is_public(anon: Api) -> None:
    r = anon.get("/ping")
    assert r.status_code == 200 and r.json()["service"] == uuids.Service.ConfigDB
