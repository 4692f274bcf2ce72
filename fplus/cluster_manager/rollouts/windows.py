"""Maintenance windows (pure): when a rollout may change a cluster.

A window ``{selector, schedule, duration, timeZone?}`` opens at each fire time of
``schedule``, a five-field cron expression (minute hour day-of-month month day-of-week, as
:mod:`croniter` reads it) evaluated in ``timeZone`` (an IANA name, default ``"UTC"``), and
stays open ``duration`` seconds of elapsed time (60 to 7 days; the API also takes ``"4h"``,
``"90m"``, ``"1h30m"``, ``"2d"``, stored as seconds). It applies to the clusters whose labels
its ``selector`` (a Kubernetes LabelSelector) matches.

A cluster matched by no window may change at any time; one matched by several may change
while any of them is open. On a daylight-saving change a fire time the clock skips is moved
to the first minute after the jump, and one it repeats fires twice.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cache
from zoneinfo import ZoneInfo, available_timezones

from croniter import CroniterError, croniter

from fplus.jsontypes import as_object, is_object
from fplus.kubenames.labels import selector_errors, selector_matches

MIN_DURATION = 60
MAX_DURATION = 7 * 24 * 3600
DEFAULT_ZONE = "UTC"
FIELDS = ("selector", "schedule", "duration", "timeZone")
_DURATION = re.compile(r"(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?")
_UNITS = (86400, 3600, 60, 1)
_MINUTE = timedelta(minutes=1)
_EPOCH = datetime(2000, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Window:
    """One stored window; ``duration`` in seconds, ``time_zone`` an IANA name."""

    name: str
    selector: Mapping[str, object]
    schedule: str
    duration: int
    time_zone: str


def duration_seconds(value: object) -> int | None:
    """``value`` (whole seconds, or ``"4h"``, ``"90m"``, ``"1h30m"``, ``"2d"``, ``"45s"``) in
    seconds; None if it is neither or outside 60 seconds to 7 days."""
    seconds: int | None = None
    if isinstance(value, int) and not isinstance(value, bool):
        seconds = value
    elif isinstance(value, str) and value and (match := _DURATION.fullmatch(value)):
        seconds = sum(int(part) * unit for part, unit in zip(match.groups(), _UNITS, strict=True)
                      if part is not None)
    if seconds is None or not MIN_DURATION <= seconds <= MAX_DURATION:
        return None
    return seconds


@cache
def _zones() -> frozenset[str]:
    return frozenset(available_timezones())


def _zone(name: object) -> ZoneInfo | None:
    """The IANA time zone ``name``, or None."""
    return ZoneInfo(name) if isinstance(name, str) and name in _zones() else None


def _schedule_ok(schedule: object) -> bool:
    """A five-field cron expression that ever fires (cron has no years: one that fires once
    fires again)."""
    if not isinstance(schedule, str) or len(schedule.split()) != 5:
        return False
    try:
        croniter(schedule, _EPOCH).get_next(datetime)
    except (CroniterError, ValueError, KeyError, OverflowError):
        return False
    return True


def window_errors(body: object) -> dict[str, str]:
    """Why a window's body ``{selector, schedule, duration, timeZone?}`` is refused, by
    field (``{}``: well-formed)."""
    if not is_object(body):
        return {"": "the body must be an object {selector, schedule, duration, timeZone?}"}
    errors: dict[str, str] = {}
    unknown = set(body) - set(FIELDS)
    if unknown:
        errors[""] = f"unknown keys: {', '.join(sorted(unknown))}"
    for field in ("selector", "schedule", "duration"):
        if field not in body:
            errors[field] = f"{field} is required"
    if "selector" in body:
        errors |= selector_errors(body["selector"])
    if "schedule" in body and not _schedule_ok(body["schedule"]):
        errors["schedule"] = ("schedule must be a five-field cron expression (minute hour "
                              "day-of-month month day-of-week, e.g. \"0 22 * * 1-5\") that "
                              "fires again")
    if "duration" in body and duration_seconds(body["duration"]) is None:
        errors["duration"] = ("duration must be whole seconds from 60 to 604800, or a "
                              "string such as \"4h\", \"90m\", \"1h30m\" or \"2d\" in that range")
    if "timeZone" in body and _zone(body["timeZone"]) is None:
        errors["timeZone"] = ("timeZone must be an IANA time zone name such as "
                              "\"Europe/London\" or \"UTC\"")
    return errors


def window_entry(name: str, body: Mapping[str, object]) -> dict[str, object]:
    """The stored entry of window ``name`` from a ``body`` :func:`window_errors` accepted:
    ``duration`` in seconds, ``timeZone`` filled in."""
    return {"name": name, "selector": body["selector"], "schedule": body["schedule"],
            "duration": duration_seconds(body["duration"]),
            "timeZone": body.get("timeZone", DEFAULT_ZONE)}


def parse_windows(entries: Mapping[str, object]) -> list[Window]:
    """The windows of the stored ``entries`` (by object UUID), by name; an entry that is not
    a well-formed window is skipped."""
    windows = []
    for key, entry in entries.items():
        body = {k: v for k, v in as_object(entry).items() if k in FIELDS}
        seconds = duration_seconds(body.get("duration"))
        selector, schedule = body.get("selector"), body.get("schedule")
        zone = body.get("timeZone", DEFAULT_ZONE)
        if (window_errors(body) or seconds is None or not is_object(selector)
                or not isinstance(schedule, str) or not isinstance(zone, str)):
            continue
        name = as_object(entry).get("name")
        windows.append(Window(name=name if isinstance(name, str) else key,
                              selector=selector, schedule=schedule, duration=seconds,
                              time_zone=zone))
    return sorted(windows, key=lambda w: w.name)


def window_open(window: Window, now: datetime) -> tuple[bool, datetime | None]:
    """Whether ``window`` is open at ``now`` (aware; naive is taken as UTC), and if not when
    it next opens (UTC; None if never)."""
    zone = ZoneInfo(window.time_zone)
    at = now.replace(tzinfo=UTC) if now.tzinfo is None else now.astimezone(UTC)
    # The fire times are whole minutes: the last one at or before `at` is the last one
    # before the next minute.
    after = at.replace(second=0, microsecond=0) + _MINUTE
    try:
        last = croniter(window.schedule, after.astimezone(zone)).get_prev(datetime)
    except CroniterError:
        last = None
    if last is not None and at < last.astimezone(UTC) + timedelta(seconds=window.duration):
        return True, None
    try:
        upcoming: datetime = croniter(window.schedule, at.astimezone(zone)).get_next(datetime)
    except CroniterError:
        return False, None
    return False, upcoming.astimezone(UTC)


def window_state(labels: Mapping[str, str], windows: Sequence[Window],
                 now: datetime) -> tuple[bool, datetime | None]:
    """Whether a cluster with ``labels`` may change at ``now``, and if not when the first of
    its windows opens; ``(True, None)`` when no window matches it."""
    matched = [w for w in windows if selector_matches(w.selector, labels)]
    if not matched:
        return True, None
    opens: list[datetime] = []
    for window in matched:
        is_open, upcoming = window_open(window, now)
        if is_open:
            return True, None
        if upcoming is not None:
            opens.append(upcoming)
    return False, min(opens, default=None)
