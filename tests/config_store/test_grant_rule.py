"""The grant rule (least privilege): creating a grant needs WriteACL on its permission and
holding that permission on the target in the same or a wider form, or holding Grant there.

Every case is one actor holding some grants (WriteACL on the permission unless the case says
otherwise) asking ``POST /v2/grant`` for one grant to another principal, over real HTTP.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from fplus.config_store import uuids
from harness.servers import Api
from tests.config_store.actors import Actor, add_member, grants_of, make_principal, set_owner
from tests.conftest import make_class, make_object

P, A, C, S, NULL = uuids.ConfigDBPerm, uuids.AuthPerm, uuids.Class, uuids.Special, uuids.NULL
X = P.ReadApp  # the permission most cases hand out

Spec = tuple[str, str, bool, str | None]  # (permission, target key, plural, object key)


@dataclass(frozen=True)
class Case:
    name: str
    holds: tuple[Spec, ...]
    wanted: Spec
    status: int
    writeacl: bool = True
    extra: tuple[Spec, ...] = field(default=())


def held(target: str, plural: bool = False, obj: str | None = None, perm: str = X) -> Spec:
    return (perm, target, plural, obj)


CASES = [
    Case("holds-nothing", (), held("app"), 403),
    Case("same-target", (held("app"),), held("app"), 201),
    Case("other-target", (held("app"),), held("other_app"), 403),
    Case("wildcard-covers-a-target", (held("null"),), held("app"), 201),
    Case("wildcard-covers-plural", (held("null"),), held("klass", True), 201),
    Case("wildcard-covers-wildcard", (held("null"),), held("null"), 201),
    Case("target-does-not-cover-wildcard", (held("app"),), held("null"), 403),
    Case("plural-covers-member", (held("klass", True),), held("member"), 201),
    Case("plural-covers-member-of-subclass", (held("klass", True),), held("sub_member"), 201),
    Case("plural-covers-plural", (held("klass", True),), held("klass", True), 201),
    Case("plural-covers-plural-on-subclass", (held("klass", True),), held("sub", True), 201),
    Case("plural-does-not-cover-the-class-itself", (held("klass", True),), held("klass"), 403),
    Case("plural-does-not-cover-an-outsider", (held("klass", True),), held("other_app"), 403),
    Case("plural-on-subclass-does-not-cover-superclass", (held("sub", True),),
         held("klass", True), 403),
    Case("non-plural-does-not-cover-plural", (held("klass"),), held("klass", True), 403),
    Case("plural-on-a-class-of-the-wildcard-does-not-cover-it", (held(C.Special, True),),
         held("null"), 403),
    Case("restricted-covers-same-restriction", (held("app", obj="o"),),
         held("app", obj="o"), 201),
    Case("restricted-does-not-cover-another", (held("app", obj="o"),),
         held("app", obj="o2"), 403),
    Case("restricted-does-not-cover-unrestricted", (held("app", obj="o"),), held("app"), 403),
    Case("unrestricted-covers-restricted", (held("app"),), held("app", obj="o"), 201),
    Case("self-covers-self", (held("self"),), held("self"), 201),
    Case("self-covers-the-granter", (held("self"),), held("me"), 201),
    Case("self-does-not-cover-others", (held("self"),), held("app"), 403),
    Case("granter-itself-does-not-cover-self", (held("me"),), held("self"), 403),
    Case("mine-covers-mine", (held("mine"),), held("mine"), 201),
    Case("mine-covers-an-owned-object", (held("mine"),), held("owned"), 201),
    Case("mine-is-not-self", (held("mine"),), held("self"), 403),
    Case("plural-on-special-does-not-cover-self", (held(C.Special, True),), held("self"), 403),
    Case("group-covers-its-member", (held("app", perm=P.All),), held("app"), 201),
    Case("group-covers-the-group", (held("app", perm=P.All),), held("app", perm=P.All), 201),
    Case("members-do-not-cover-the-group",
         (held("app", perm=P.ReadApp), held("app", perm=P.WriteApp)),
         held("app", perm=P.All), 403),
    Case("grant-on-target", (held("app", perm=A.Grant),), held("app"), 201),
    Case("grant-on-other-target", (held("other_app", perm=A.Grant),), held("app"), 403),
    Case("grant-plural-covers-member", (held("klass", True, perm=A.Grant),),
         held("member"), 201),
    Case("grant-needs-writeacl-too", (held("app", perm=A.Grant),), held("app"), 403,
         writeacl=False),
    Case("holding-needs-writeacl-too", (held("app"),), held("app"), 403, writeacl=False),
]


@pytest.fixture(scope="module")
def world(shared_actor: Actor) -> dict[str, str]:
    """The targets the cases name: apps, a class with a subclass and members, objects."""
    admin = shared_actor.admin
    klass, sub = make_class(admin), make_class(admin)
    r = admin.put(f"/v2/class/{klass}/direct/subclass/{sub}")
    assert r.status_code == 204, r.text
    owned = make_object(admin, C.Device)
    set_owner(admin, owned, shared_actor.uuid)
    return {"app": make_object(admin, C.App), "other_app": make_object(admin, C.App),
            "klass": klass, "sub": sub, "member": make_object(admin, klass),
            "sub_member": make_object(admin, sub), "o": make_object(admin, C.Device),
            "o2": make_object(admin, C.Device), "owned": owned, "me": shared_actor.uuid,
            "null": NULL, "self": S.Self, "mine": S.Mine}


def resolve(world: dict[str, str], spec: Spec) -> dict[str, Any]:
    perm, target, plural, obj = spec
    body: dict[str, Any] = {"permission": perm, "target": world.get(target, target),
                            "plural": plural}
    if obj is not None:
        body["object"] = world[obj]
    return body


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_the_grant_rule(actor: Actor, admin: Api, world: dict[str, str], case: Case) -> None:
    who, _ = make_principal(admin)
    for spec in case.holds:
        body = resolve(world, spec)
        actor.grant(body["permission"], body["target"], body["plural"], body.get("object"))
    wanted = resolve(world, case.wanted)
    if case.writeacl:
        actor.grant(A.WriteACL, wanted["permission"])
    r = actor.basic().post("/v2/grant", json={"principal": who, **wanted})
    assert r.status_code == case.status, r.text
    assert len(grants_of(admin, who)) == (1 if case.status == 201 else 0)
    if case.status == 403:
        assert r.json()["error"].startswith("permission denied")


def test_grant_permission_is_seeded(admin: Api) -> None:
    r = admin.get(f"/v2/app/{uuids.App.Info}/object/{A.Grant}")
    assert r.status_code == 200 and r.json() == {"name": "Grant"}, r.text
    assert A.Grant in admin.get(f"/v2/class/{C.Permission}/direct/member").json()


def test_the_root_is_exempt(admin: Api, world: dict[str, str]) -> None:
    who, _ = make_principal(admin)
    r = admin.post("/v2/grant", json={"principal": who, "permission": P.WriteApp,
                                      "target": NULL})
    assert r.status_code == 201, r.text


def test_a_principal_cannot_grant_itself_what_it_lacks(actor: Actor,
                                                       world: dict[str, str]) -> None:
    """The escalation the rule closes: WriteACL on WriteApp alone let a principal grant
    itself WriteApp on any app (the cluster-manager principal on the Bootstrap script)."""
    actor.grant(A.WriteACL, P.WriteApp)
    for target in (world["app"], uuids.App.BootstrapScript, NULL):
        r = actor.basic().post("/v2/grant", json={"principal": actor.uuid,
                                                  "permission": P.WriteApp, "target": target})
        assert r.status_code == 403, r.text
    assert len(grants_of(actor.admin, actor.uuid)) == 1  # the WriteACL grant only


def test_what_the_cluster_manager_hands_out(actor: Actor, admin: Api) -> None:
    """Plural Pull on the repository group class and ReadApp/WriteApp on the status app are
    enough to hand an edge its grants: Pull on its cluster, and the status app restricted to
    its cluster; by POST /v2/grant and in one POST /v2/principal."""
    repos = make_class(admin)
    clusters = make_class(admin)  # plays the Edge cluster class (the Cluster Manager seeds it)
    cluster = make_object(admin, clusters)
    add_member(admin, repos, cluster)
    status = uuids.App.EdgeClusterStatus
    actor.grant(uuids.GitPerm.Pull, repos, plural=True)
    for perm in (P.ReadApp, P.WriteApp):
        actor.grant(perm, status)
    for perm in (uuids.GitPerm.Pull, P.ReadApp, P.WriteApp):
        actor.grant(A.WriteACL, perm)
    edge_grants = [{"permission": uuids.GitPerm.Pull, "target": cluster},
                   {"permission": P.ReadApp, "target": status, "object": cluster},
                   {"permission": P.WriteApp, "target": status, "object": cluster}]
    who, _ = make_principal(admin)
    for g in edge_grants:
        r = actor.basic().post("/v2/grant", json={"principal": who, **g})
        assert r.status_code == 201, r.text
    actor.grant(A.WriteKerberos, C.Principal)
    actor.grant(P.CreateObj, C.Principal)
    r = actor.basic().post("/v2/principal", json={"name": f"edge-{who[:8]}",
                                                  "grants": edge_grants})
    assert r.status_code == 201, r.text
    assert len(grants_of(admin, r.json()["uuid"])) == 3
    other = make_object(admin, clusters)  # not in the group: not the actor's to give
    r = actor.basic().post("/v2/grant", json={"principal": who,
                                              "permission": uuids.GitPerm.Pull,
                                              "target": other})
    assert r.status_code == 403, r.text
