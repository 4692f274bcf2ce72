"""The console's Maintenance windows page on the real services: linked from every page's
navigation, it lists each window with its selector, schedule, zone, duration and whether it
is open now or when it next opens; a signed-in principal who may not read windows is
refused."""

from __future__ import annotations

import re
import uuid

from harness.servers import Api
from harness.stack import Stack
from tests.conftest import make_user
from tests.console.conftest import console_session


def test_the_windows_page_lists_each_window(stack: Stack) -> None:
    root = Api(stack.manager.url, stack.admin.auth)
    site, always, leap = (f"s{uuid.uuid4().hex[:8]}", f"a-{uuid.uuid4().hex[:8]}",
                          f"l-{uuid.uuid4().hex[:8]}")
    assert root.put(f"/v1/maintenance-window/{always}", json={
        "selector": {"matchLabels": {"site": site}}, "schedule": "* * * * *",
        "duration": 60}).status_code == 201
    assert root.put(f"/v1/maintenance-window/{leap}", json={
        "selector": {"matchLabels": {"site": site}}, "schedule": "0 0 29 2 *",
        "duration": "1h30m", "timeZone": "Europe/London"}).status_code == 201
    try:
        session, home = console_session(stack)
        assert 'id="nav-windows"' in home and 'href="/ui/window"' in home
        page = session.get(f"{stack.manager.url}/ui/window")
        assert page.status_code == 200
        rows = {m[1]: m[0] for m in re.finditer(
            r'<tr data-uuid="[^"]+">\s*<td>([^<]+)</td>.*?</tr>', page.text, re.S)}
        assert set(rows) >= {always, leap}
        assert f"site={site}" in rows[always] and "Open now" in rows[always]
        assert "Europe/London" in rows[leap] and "1h 30m" in rows[leap]
        assert "next <time" in rows[leap] and "-02-29" in rows[leap]

        _, user = make_user(stack.admin)
        other, _ = console_session(stack, user.auth[0], user.auth[1])
        refused = other.get(f"{stack.manager.url}/ui/window")
        assert refused.status_code == 403 and always not in refused.text
    finally:
        for name in (always, leap):
            root.delete(f"/v1/maintenance-window/{name}")
