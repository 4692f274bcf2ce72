"""The Auth audit log (``GET /v2/audit``): exactly one row per change made through the Auth
API, in the change's own transaction, naming who, what, on what and the request id; a row
per refused change (403) with nothing else written; no password anywhere in the database or
the answers; who may read it; paging. On both storage backends (``config_store``)."""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any

import psycopg

from fplus.config_store import uuids
from harness.servers import ADMIN_PASSWORD, Api, ConfigStoreProcess
from tests.config_store.actors import Actor, grants_of, unique
from tests.conftest import grant, make_class
from tests.fplus_cli.test_journey import fplus

A = uuids.AuthPerm


def _admin(store: ConfigStoreProcess) -> Api:
    return Api(store.url, ("admin", ADMIN_PASSWORD))


def _rid() -> dict[str, str]:
    """A fresh ``X-Request-Id`` header."""
    return {"X-Request-Id": f"test-{uuid.uuid4().hex}"}


def _rows(api: Api, **query: str) -> list[dict[str, Any]]:
    r = api.get("/v2/audit", params={"limit": "1000", **query})
    assert r.status_code == 200, r.text
    return r.json()["entries"]


def _database_text(store: ConfigStoreProcess) -> bytes:
    """Everything the database holds, read directly: the SQLite file with its WAL, or every
    row of every table on PostgreSQL."""
    if "--database" not in store.extra_args:
        files = sorted(store.data_dir.glob("config-store.db*"))
        assert files
        return b"".join(f.read_bytes() for f in files)
    url = store.extra_args[store.extra_args.index("--database") + 1]
    with psycopg.connect(url, autocommit=True) as conn:
        tables = [r[0] for r in conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public'").fetchall()]
        assert "cs_audit" in tables
        return "\n".join(str(row) for table in tables
                         for row in conn.execute(f'SELECT * FROM "{table}"')).encode()


def test_each_change_writes_one_row_and_no_password(config_store: ConfigStoreProcess) -> None:
    admin = _admin(config_store)
    me = admin.get("/v2/whoami/uuid").json()
    name, first, second = unique("audited"), f"pw-{uuid.uuid4().hex}", f"pw-{uuid.uuid4().hex}"
    sent: list[str] = []

    def send(method: str, path: str, status: int, **kw: Any) -> Any:
        headers = _rid()
        sent.append(headers["X-Request-Id"])
        r = admin.request(method, path, headers=headers, **kw)
        assert r.status_code == status, r.text
        assert r.headers["X-Request-Id"] == headers["X-Request-Id"]
        return r.json() if r.content else None

    principal = send("POST", "/v2/principal", 201, json={"name": name, "password": first})["uuid"]
    send("PUT", f"/v2/principal/{principal}/password", 204, json=second)
    generated = send("POST", f"/v2/principal/{principal}/password", 200)["password"]
    granted = send("POST", "/v2/grant", 201, json={
        "principal": principal, "permission": A.ReadACL, "target": uuids.NULL})["uuid"]
    send("POST", "/v2/grant", 200, json={  # the same again: no change, no row
        "principal": principal, "permission": A.ReadACL, "target": uuids.NULL})
    sent.pop()
    send("DELETE", f"/v2/grant/{granted}", 204)
    send("DELETE", f"/v2/principal/{principal}", 204)

    answer = admin.get("/v2/audit", params={"target": name})
    assert answer.status_code == 200, answer.text
    rows = answer.json()["entries"]
    assert [(r["action"], r["target"]["kind"], r["target"]["uuid"]) for r in rows] == [
        ("principal.delete", "principal", principal),
        ("grant.remove", "grant", granted),
        ("grant.add", "grant", granted),
        ("principal.password", "principal", principal),
        ("principal.password", "principal", principal),
        ("principal.create", "principal", principal),
    ]
    assert [r["requestId"] for r in rows] == sent[::-1]
    for row in rows:
        assert row["principal"] == {"uuid": me, "name": "admin"}
        assert row["target"]["name"] == name
        assert (row["outcome"], row["status"]) == ("ok", 200)
    assert rows[2]["detail"] == {"principal": principal, "permission": A.ReadACL,
                                 "target": uuids.NULL, "plural": False}
    assert rows[3]["detail"]["generated"] is True and rows[4]["detail"]["generated"] is False
    assert [r["seq"] for r in rows] == sorted((r["seq"] for r in rows), reverse=True)

    stored = _database_text(config_store)
    assert name.encode() in stored  # the read is real: the rows are there
    for secret in (first, second, generated):
        assert secret.encode() not in stored
        assert secret not in answer.text


def test_a_refused_change_writes_nothing_but_its_refusal(config_store: ConfigStoreProcess,
                                                         actor: Actor) -> None:
    admin = _admin(config_store)
    victim_name = unique("victim")
    victim = admin.post("/v2/principal", json={"name": victim_name}).json()["uuid"]
    user = actor.basic()

    headers = _rid()
    r = user.delete(f"/v2/principal/{victim}", headers=headers)
    assert r.status_code == 403, r.text
    r = user.post("/v2/grant", json={"principal": victim, "permission": A.ReadACL,
                                     "target": uuids.NULL})
    assert r.status_code == 403, r.text

    assert admin.get(f"/v2/principal/{victim}?detail=true").status_code == 200
    assert grants_of(admin, victim) == []
    refused = _rows(admin, principal=actor.uuid)
    assert [(r["action"], r["target"]["uuid"], r["outcome"], r["status"])
            for r in refused[:2]] == [("grant.add", None, "refused", 403),
                                      ("principal.delete", victim, "refused", 403)]
    assert refused[1]["requestId"] == headers["X-Request-Id"]
    assert refused[1]["principal"] == {"uuid": actor.uuid, "name": actor.name}
    assert refused[1]["target"]["name"] == victim_name
    about_victim = _rows(admin, target=victim)
    assert [r["action"] for r in about_victim] == ["principal.delete", "principal.create"]


def test_reading_needs_root_or_read_audit(config_store: ConfigStoreProcess,
                                          actor: Actor) -> None:
    assert Api(config_store.url).get("/v2/audit").status_code == 401
    assert actor.basic().get("/v2/audit").status_code == 403
    actor.grant(A.ReadAudit, uuids.NULL)
    r = actor.basic().get("/v2/audit", params={"limit": "1"})
    assert r.status_code == 200, r.text
    assert len(r.json()["entries"]) == 1
    for query, field in (({"limit": "0"}, "limit"), ({"after": "x"}, "after"),
                         ({"since": "yesterday"}, "since"), ({"cluster": "x"}, "cluster"),
                         ({"principal": ""}, "principal")):
        r = actor.basic().get("/v2/audit", params=query)
        assert r.status_code == 400 and field in r.json()["error"], (query, r.text)


def test_pages_newest_first(config_store: ConfigStoreProcess) -> None:
    admin = _admin(config_store)
    principal = admin.post("/v2/principal", json={"name": unique("paged")}).json()["uuid"]
    for perm in (A.ReadACL, A.WriteACL, A.ReadKerberos):
        admin.delete(f"/v2/grant/{grant(admin, principal, perm, uuids.NULL)}")
    whole = _rows(admin, target=principal)
    assert len(whole) == 1  # its grants are rows of their own, named by its name
    name = whole[0]["target"]["name"]
    whole = _rows(admin, target=name)
    assert len(whole) == 7
    pages, after = [], None
    while True:
        r = admin.get("/v2/audit", params={"target": name, "limit": "3",
                                          **({"after": after} if after else {})})
        assert r.status_code == 200, r.text
        pages.append(r.json()["entries"])
        after = r.json()["next"]
        if after is None:
            break
    assert [len(p) for p in pages] == [3, 3, 1]
    assert [row for page in pages for row in page] == whole
    assert _rows(admin, target=name, since="2999-01-01T00:00:00Z") == []
    assert _rows(admin, target=name, since="2000-01-01T00:00:00Z") == whole


def test_identities_and_groups_are_recorded(config_store: ConfigStoreProcess) -> None:
    admin, kind = _admin(config_store), "kerberos"
    group = make_class(admin)
    name = unique("grouped")
    r = admin.post("/v2/principal", json={"name": name, "groups": [group]})
    assert r.status_code == 201, r.text
    principal = r.json()["uuid"]
    upn = f"{unique('k')}@EXAMPLE.ORG"
    assert admin.put(f"/v2/principal/{principal}/{kind}", json=upn).status_code == 204
    assert admin.delete(f"/v2/principal/{principal}/{kind}").status_code == 204
    rows = _rows(admin, target=principal)
    assert [(r["action"], r["detail"]) for r in rows] == [
        ("identity.remove", {"kind": kind}),
        ("identity.set", {"kind": kind, "name": upn}),
        ("group.add", {"group": group}),
        ("principal.create", {"class": uuids.Class.Principal, "withPassword": False}),
    ]


def test_fplus_audit_store(config_store: ConfigStoreProcess, tmp_path: Path) -> None:
    """``fplus audit --store`` shows the Config Store's rows as the API answers them."""
    admin = _admin(config_store)
    name = unique("cli")
    principal = admin.post("/v2/principal", json={"name": name}).json()["uuid"]
    grant(admin, principal, A.ReadACL, uuids.NULL)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("FPLUS_") and k != "CONFIG_STORE_URL"}
    env |= {"XDG_CONFIG_HOME": str(tmp_path / "config"), "NO_COLOR": "1",
            "FPLUS_URL": "http://127.0.0.1:9", "CONFIG_STORE_URL": config_store.url,
            "FPLUS_USER": "admin", "FPLUS_PASSWORD": ADMIN_PASSWORD}
    shown = json.loads(fplus(env, "audit", "--store", "--target", name, "-o", "json").stdout)
    assert shown == _rows(admin, target=name)
    assert [r["action"] for r in shown] == ["grant.add", "principal.create"]
    # -o wide: the default table shortens prose to fit 80 columns
    table = fplus(env, "audit", "--store", "--target", name, "--since", "1h", "-o", "wide").stdout
    assert "principal.create" in table and f"grant {name}" in table and "admin" in table
    one = json.loads(fplus(env, "audit", "--store", "--target", name, "--limit", "1",
                           "-o", "json").stdout)
    assert one == shown[:1]
    assert "--target" in fplus(env, "audit", "--store", "--cluster", "x", expect=2).stderr
    assert "--store" in fplus(env, "audit", "--target", name, expect=2).stderr
    env["FPLUS_PASSWORD"] = "wrong"
    refused = fplus(env, "audit", "--store", expect=None)
    assert refused.returncode != 0 and "wrong username or password" in refused.stderr


def test_a_replaced_grant_says_what_it_was(config_store: ConfigStoreProcess) -> None:
    admin = _admin(config_store)
    principal = admin.post("/v2/principal", json={"name": unique("replaced")}).json()["uuid"]
    granted = grant(admin, principal, A.ReadACL, uuids.NULL)
    r = admin.put(f"/v2/grant/{granted}", json={"principal": principal,
                                                "permission": A.ReadKerberos,
                                                "target": uuids.NULL})
    assert r.status_code == 204, r.text
    [replaced, added] = _rows(admin, target=granted)
    assert (replaced["action"], added["action"]) == ("grant.replace", "grant.add")
    assert replaced["detail"]["permission"] == A.ReadKerberos
    assert replaced["detail"]["was"]["permission"] == A.ReadACL
