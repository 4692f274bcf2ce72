"""Maintenance windows as pure functions: a body's refusals, the stored entries read back,
and whether a cluster may change at a given instant (time zones and daylight-saving changes
included), on fixed clocks."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from fplus.cluster_manager.rollouts.windows import (
    Window,
    duration_seconds,
    parse_windows,
    window_entry,
    window_errors,
    window_open,
    window_state,
)

LEEDS = {"matchLabels": {"site": "leeds"}}
LONDON = ZoneInfo("Europe/London")
BODY: dict[str, Any] = {"selector": LEEDS, "schedule": "0 22 * * 1-5", "duration": "4h",
                        "timeZone": "Europe/London"}


def window(schedule: str = "0 22 * * 1-5", duration: int = 4 * 3600, zone: str = "UTC",
           selector: dict[str, Any] | None = None, name: str = "nightly") -> Window:
    return Window(name=name, selector=LEEDS if selector is None else selector,
                  schedule=schedule, duration=duration, time_zone=zone)


@pytest.mark.parametrize(("change", "field"), [
    ({"selector": {"matchLabels": {"site": "-bad-"}}}, "selector.matchLabels.site"),
    ({"selector": "site=leeds"}, "selector"),
    ({"schedule": "0 22 * *"}, "schedule"),
    ({"schedule": "0 0 22 * * 1-5"}, "schedule"),
    ({"schedule": "61 22 * * *"}, "schedule"),
    ({"schedule": "0 0 30 2 *"}, "schedule"),
    ({"schedule": 5}, "schedule"),
    ({"duration": 59}, "duration"),
    ({"duration": 7 * 24 * 3600 + 1}, "duration"),
    ({"duration": "4 hours"}, "duration"),
    ({"duration": True}, "duration"),
    ({"duration": ""}, "duration"),
    ({"timeZone": "Mars/Olympus"}, "timeZone"),
    ({"timeZone": "../etc/passwd"}, "timeZone"),
    ({"timeZone": 1}, "timeZone"),
    ({"extra": 1}, ""),
])
def test_a_bad_field_is_named(change: dict[str, Any], field: str) -> None:
    errors = window_errors(BODY | change)
    assert field in errors, errors
    assert window_errors(BODY) == {}


@pytest.mark.parametrize("missing", ["selector", "schedule", "duration"])
def test_required_fields(missing: str) -> None:
    body = {k: v for k, v in BODY.items() if k != missing}
    assert missing in window_errors(body)


def test_not_an_object() -> None:
    assert "" in window_errors([BODY])


@pytest.mark.parametrize(("value", "seconds"), [
    (3600, 3600), ("4h", 14400), ("90m", 5400), ("1h30m", 5400), ("2d", 172800),
    ("600s", 600), ("7d", 604800), ("59s", None), ("8d", None), ("h", None), (1.5, None),
])
def test_durations(value: object, seconds: int | None) -> None:
    assert duration_seconds(value) == seconds


def test_the_entry_stores_seconds_and_the_default_zone() -> None:
    body = {k: v for k, v in BODY.items() if k != "timeZone"}
    assert window_entry("nightly", body) == {
        "name": "nightly", "selector": LEEDS, "schedule": "0 22 * * 1-5", "duration": 14400,
        "timeZone": "UTC"}


def test_parse_windows_skips_bad_entries_and_sorts_by_name() -> None:
    entries = {
        "u1": window_entry("zeta", BODY),
        "u2": {"name": "bad", "selector": LEEDS, "schedule": "nope", "duration": 60},
        "u3": "not an object",
        "u4": window_entry("alpha", BODY | {"timeZone": "UTC"}),
    }
    assert parse_windows(entries) == [
        Window("alpha", LEEDS, "0 22 * * 1-5", 14400, "UTC"),
        Window("zeta", LEEDS, "0 22 * * 1-5", 14400, "Europe/London"),
    ]


def at(*parts: int, tz: ZoneInfo | None = None) -> datetime:
    return datetime(*parts, tzinfo=tz or UTC)


@pytest.mark.parametrize(("now", "is_open", "upcoming"), [
    # Thursday 2026-01-08: opens 22:00 for four hours.
    (at(2026, 1, 8, 21, 59, 59), False, at(2026, 1, 8, 22)),
    (at(2026, 1, 8, 22), True, None),
    (at(2026, 1, 9, 1, 59, 59), True, None),
    (at(2026, 1, 9, 2), False, at(2026, 1, 9, 22)),
    # Friday night's window runs into Saturday; none opens on the weekend.
    (at(2026, 1, 10, 1, 30), True, None),
    (at(2026, 1, 10, 12), False, at(2026, 1, 12, 22)),
])
def test_open_and_next_opening(now: datetime, is_open: bool, upcoming: datetime | None) -> None:
    assert window_state({"site": "leeds"}, [window()], now) == (is_open, upcoming)


def test_naive_now_is_utc_and_seconds_are_within_the_minute() -> None:
    assert window_open(window(), datetime(2026, 1, 8, 22, 0, 30)) == (True, None)
    assert window_open(window(duration=60), at(2026, 1, 8, 22, 1)) == (
        False, at(2026, 1, 9, 22))


def test_the_schedule_is_read_in_the_time_zone() -> None:
    tokyo = window(schedule="0 9 * * *", duration=3600, zone="Asia/Tokyo")
    # 09:00 in Tokyo is 00:00 UTC.
    assert window_open(tokyo, at(2026, 1, 8, 0, 30)) == (True, None)
    assert window_open(tokyo, at(2026, 1, 8, 9, 30)) == (False, at(2026, 1, 9, 0))


def test_summer_time_moves_the_opening_in_utc() -> None:
    london = window(schedule="0 22 * * *", duration=3600, zone="Europe/London")
    # Winter: 22:00 London is 22:00 UTC; summer: 21:00 UTC.
    assert window_open(london, at(2026, 1, 8, 21, 30)) == (False, at(2026, 1, 8, 22))
    assert window_open(london, at(2026, 7, 8, 21, 30)) == (True, None)
    assert window_open(london, at(2026, 7, 8, 20)) == (False, at(2026, 7, 8, 21))


def test_the_day_the_clocks_go_forward() -> None:
    # 2026-03-29 in London: 01:00 GMT becomes 02:00 BST; 01:30 does not happen that day.
    early = window(schedule="30 1 * * *", duration=3600, zone="Europe/London")
    before = at(2026, 3, 29, 0, 59, tz=LONDON)  # 00:59 UTC
    is_open, upcoming = window_open(early, before)
    assert not is_open
    assert upcoming == at(2026, 3, 29, 1)  # the first minute after the jump (02:00 BST)
    assert window_open(early, at(2026, 3, 29, 1, 59)) == (True, None)
    # The duration is elapsed time: one hour after 02:00 BST is 03:00 BST.
    assert window_open(early, at(2026, 3, 29, 2)) == (False, at(2026, 3, 30, 0, 30))
    # A window straddling the change stays open its elapsed duration, not its wall-clock one.
    night = window(schedule="0 0 * * *", duration=3 * 3600, zone="Europe/London")
    assert window_open(night, at(2026, 3, 29, 2, 59)) == (True, None)
    assert window_open(night, at(2026, 3, 29, 3)) == (False, at(2026, 3, 29, 23))


def test_the_day_the_clocks_go_back() -> None:
    # 2026-10-25 in London: 02:00 BST becomes 01:00 GMT; 01:30 happens twice.
    early = window(schedule="30 1 * * *", duration=600, zone="Europe/London")
    assert window_open(early, at(2026, 10, 25, 0, 35)) == (True, None)  # 01:35 BST
    assert window_open(early, at(2026, 10, 25, 0, 45)) == (False, at(2026, 10, 25, 1, 30))
    assert window_open(early, at(2026, 10, 25, 1, 35)) == (True, None)  # 01:35 GMT


def test_no_matching_window_means_any_time() -> None:
    assert window_state({"site": "york"}, [window()], at(2026, 1, 10, 12)) == (True, None)
    assert window_state({}, [], at(2026, 1, 10, 12)) == (True, None)


def test_several_windows_open_if_any_is_else_the_earliest_opening() -> None:
    weekday = window(name="weekday")
    sunday = window(name="sunday", schedule="0 6 * * 0", duration=3600)
    other_site = window(name="york", schedule="0 12 * * 6",
                        selector={"matchLabels": {"site": "york"}})
    windows = [weekday, sunday, other_site]
    labels = {"site": "leeds"}
    # Saturday noon: york's window is open but does not match; Sunday 06:00 comes first.
    assert window_state(labels, windows, at(2026, 1, 10, 12)) == (False, at(2026, 1, 11, 6))
    assert window_state(labels, windows, at(2026, 1, 11, 6, 30)) == (True, None)
    assert window_state(labels, windows, at(2026, 1, 11, 7)) == (False, at(2026, 1, 12, 22))
    assert window_state(labels, windows, at(2026, 1, 12, 23)) == (True, None)


def test_a_selector_with_expressions_and_the_empty_selector() -> None:
    lines = window(selector={"matchExpressions": [
        {"key": "tier", "operator": "In", "values": ["line"]}]})
    everyone = window(name="all", selector={}, schedule="0 3 * * *", duration=60)
    now = at(2026, 1, 10, 12)
    assert window_state({"tier": "office"}, [lines], now) == (True, None)
    assert window_state({"tier": "line"}, [lines], now) == (False, at(2026, 1, 12, 22))
    assert window_state({"tier": "office"}, [lines, everyone], now) == (
        False, at(2026, 1, 11, 3))


def test_the_next_opening_is_after_now() -> None:
    w = window(schedule="*/15 * * * *", duration=60)
    now = at(2026, 1, 8, 10, 1)
    is_open, upcoming = window_open(w, now)
    assert not is_open and upcoming is not None
    assert now < upcoming <= now + timedelta(minutes=15)
