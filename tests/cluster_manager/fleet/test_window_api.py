"""Maintenance windows on the real services: created, replaced, listed with whether each
is open now and when it next opens, read and deleted, each change audited; refusals name the
field and write nothing; reading takes the cluster permission or read access to the app.

The clock is not driven here: the windows are chosen to be open at every instant (each
minute opens one for a minute) or closed at nearly every one (the 29th of February)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from fplus.config_store import uuids
from harness.servers import Api
from harness.stack import Stack, wait_for
from tests.conftest import grant, make_user

WINDOWS = uuids.App.MaintenanceWindow
ALWAYS = {"selector": {"matchLabels": {"site": "leeds"}}, "schedule": "* * * * *",
          "duration": 60}
LEAP_DAY = {"selector": {"matchExpressions": [{"key": "tier", "operator": "Exists"}]},
            "schedule": "0 0 29 2 *", "duration": "4h", "timeZone": "Asia/Tokyo"}


def stored(stack: Stack) -> Any:
    return stack.admin.get(f"/v2/app/{WINDOWS}/object").json()


def test_put_list_get_replace_delete(stack: Stack, root: Api) -> None:
    name = f"w-{uuid.uuid4().hex[:8]}"
    r = root.put(f"/v1/maintenance-window/{name}", json=LEAP_DAY)
    assert r.status_code == 201, r.text
    assert r.headers["Location"].endswith(f"/v1/maintenance-window/{name}")
    made = r.json()
    assert {k: made[k] for k in ("name", "selector", "schedule", "duration", "timeZone")} == {
        "name": name, "selector": LEAP_DAY["selector"], "schedule": "0 0 29 2 *",
        "duration": 14400, "timeZone": "Asia/Tokyo"}
    assert made["open"] is False
    opens = datetime.fromisoformat(made["nextOpen"]).astimezone(ZoneInfo("Asia/Tokyo"))
    assert (opens.month, opens.day, opens.hour, opens.minute) == (2, 29, 0, 0)
    # stored as the Config Store holds it: the entry, and the object's Info name
    assert stack.admin.get(f"/v2/app/{WINDOWS}/object/{made['uuid']}").json() == {
        "name": name, "selector": LEAP_DAY["selector"], "schedule": "0 0 29 2 *",
        "duration": 14400, "timeZone": "Asia/Tokyo"}
    info = stack.admin.get(f"/v2/app/{uuids.App.Info}/object/{made['uuid']}").json()
    assert info["name"] == name

    r = root.put(f"/v1/maintenance-window/{name}", json=ALWAYS | {"name": name})
    assert r.status_code == 200, r.text
    replaced = r.json()
    assert replaced["uuid"] == made["uuid"]
    assert (replaced["open"], replaced["nextOpen"], replaced["timeZone"]) == (True, None, "UTC")
    assert root.get(f"/v1/maintenance-window/{name}").json() == replaced
    listed = root.get("/v1/maintenance-window").json()["maintenanceWindows"]
    assert [w for w in listed if w["name"] == name] == [replaced]

    r = root.delete(f"/v1/maintenance-window/{name}")
    assert r.status_code == 200, r.text
    assert r.json() == {"uuid": made["uuid"], "name": name, "deleted": True}
    assert root.get(f"/v1/maintenance-window/{name}").status_code == 404
    assert root.delete(f"/v1/maintenance-window/{name}").status_code == 404
    assert made["uuid"] not in stored(stack)
    rows = root.get("/v1/audit", params={"limit": "1000"}).json()["entries"]
    mine = [(e["action"], e["target"]["uuid"], e["status"]) for e in rows
            if e["target"].get("name") == name]
    assert sorted(mine) == sorted([
        ("maintenance-window.put", made["uuid"], 201),
        ("maintenance-window.put", made["uuid"], 200),
        ("maintenance-window.delete", made["uuid"], 200)])


@pytest.mark.parametrize(("name", "body", "field"), [
    ("Bad_Name", ALWAYS, "name"),
    ("ok", ALWAYS | {"name": "other"}, "name"),
    ("ok", ALWAYS | {"schedule": "0 22 * *"}, "schedule"),
    ("ok", ALWAYS | {"duration": 30}, "duration"),
    ("ok", ALWAYS | {"timeZone": "Mars/Olympus"}, "timeZone"),
    ("ok", ALWAYS | {"selector": {"matchLabels": {"bad key!": "v"}}},
     "selector.matchLabels.bad key!"),
    ("ok", {"schedule": "* * * * *", "duration": 60}, "selector"),
])
def test_bad_input_is_refused_naming_the_field(stack: Stack, root: Api, name: str,
                                               body: dict[str, Any], field: str) -> None:
    before = stored(stack)
    r = root.put(f"/v1/maintenance-window/{name}", json=body)
    assert r.status_code == 422, r.text
    assert r.json()["error"].startswith(f"{field}:"), r.json()
    assert stored(stack) == before


def test_a_body_that_is_not_json_is_a_400(stack: Stack, root: Api) -> None:
    before = stored(stack)
    r = root.put("/v1/maintenance-window/ok", data="selector: {}",
                 headers={"Content-Type": "application/yaml"})
    assert r.status_code == 400 and "schedule" in r.json()["error"]
    r = root.put("/v1/maintenance-window/ok", data="{",
                 headers={"Content-Type": "application/json"})
    assert r.status_code == 400
    assert stored(stack) == before


def test_permissions(stack: Stack, root: Api) -> None:
    name = f"w-{uuid.uuid4().hex[:8]}"
    assert root.put(f"/v1/maintenance-window/{name}", json=ALWAYS).status_code == 201
    uid, user = make_user(stack.admin)
    session = Api(stack.manager.url, user.auth)
    before = stored(stack)
    assert session.get("/v1/maintenance-window").status_code == 403
    assert session.get(f"/v1/maintenance-window/{name}").status_code == 403
    grant(stack.admin, uid, uuids.ConfigDBPerm.ReadApp, WINDOWS)
    wait_for(lambda: session.get("/v1/maintenance-window").status_code == 200,
             what="the read grant applied")
    assert session.get(f"/v1/maintenance-window/{name}").json()["name"] == name
    assert session.put(f"/v1/maintenance-window/{name}", json=LEAP_DAY).status_code == 403
    assert session.delete(f"/v1/maintenance-window/{name}").status_code == 403
    assert Api(stack.manager.url).get("/v1/maintenance-window").status_code == 401
    assert stored(stack) == before
    assert root.delete(f"/v1/maintenance-window/{name}").status_code == 200
