"""Maintenance windows stored (:mod:`.windows`): one object of the Maintenance window class
each, with its Info name and its entry in the Maintenance window app, found by name.

``put`` creates or replaces a window; a malformed name or body is a 422 naming every
refused field, with nothing written. Views carry whether the window is open now and, if not,
when it next opens.
"""

from __future__ import annotations

import logging
import uuid as uuidlib
from collections.abc import Callable
from datetime import UTC, datetime

from fplus.config_store import uuids
from fplus.config_store.client import ConfigStoreClient
from fplus.jsontypes import as_object, is_object
from fplus.kubenames import LABEL_MAX, is_dns1123_label

from ..services.errors import NotFound, Unprocessable
from ..services.named_entries import create_named_entry
from .windows import FIELDS, Window, parse_windows, window_entry, window_errors, window_open

WINDOW_APP = uuids.App.MaintenanceWindow
WINDOW_CLASS = uuids.Class.MaintenanceWindow
log = logging.getLogger(__name__)


def _iso(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat().replace("+00:00", "Z")


def read_windows(cs: ConfigStoreClient) -> dict[str, Window]:
    """Every well-formed stored window, by object UUID."""
    found = as_object(cs.search(WINDOW_APP, {}, {k: k for k in ("name", *FIELDS)}))
    return {uuid: window for uuid, entry in found.items()
            for window in parse_windows({uuid: {k: v for k, v in as_object(entry).items()
                                                if v is not None}})}


def request_errors(name: str, body: object) -> dict[str, str]:
    """Why window ``name`` with ``body`` is refused, by field; a ``name`` in the body must
    be the one in the path."""
    errors: dict[str, str] = {}
    if not is_dns1123_label(name, LABEL_MAX):
        errors["name"] = (f"{name!r} is not a window name: at most {LABEL_MAX} lowercase "
                          "letters, digits and '-', alphanumeric at both ends")
    if is_object(body) and "name" in body:
        if body["name"] != name:
            errors["name"] = "the body's name must be the one in the path, or left out"
        body = {k: v for k, v in body.items() if k != "name"}
    return errors | window_errors(body)


class WindowService:
    """Create, replace, list, read and delete maintenance windows."""

    def __init__(self, cs: ConfigStoreClient,
                 clock: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self.cs = cs
        self.clock = clock

    def _view(self, uuid: str, window: Window, now: datetime) -> dict[str, object]:
        is_open, upcoming = window_open(window, now)
        return {"uuid": uuid, "name": window.name, "selector": dict(window.selector),
                "schedule": window.schedule, "duration": window.duration,
                "timeZone": window.time_zone, "open": is_open, "nextOpen": _iso(upcoming)}

    def _find(self, name: str) -> tuple[str, Window]:
        for uuid, window in read_windows(self.cs).items():
            if window.name == name:
                return uuid, window
        raise NotFound(f"no maintenance window {name!r}")

    def list(self) -> list[dict[str, object]]:
        """Every window's view, by name."""
        now = self.clock()
        return sorted((self._view(u, w, now) for u, w in read_windows(self.cs).items()),
                      key=lambda view: str(view["name"]))

    def get(self, name: str) -> dict[str, object]:
        """Window ``name``'s view; 404 if there is none."""
        return self._view(*self._find(name), self.clock())

    def put(self, name: str, body: object) -> tuple[dict[str, object], bool]:
        """Create or replace window ``name``: its view, and whether it is new."""
        errors = request_errors(name, body)
        if errors or not is_object(body):
            raise Unprocessable("; ".join(f"{field}: {why}" if field else why
                                          for field, why in errors.items()))
        entry = window_entry(name, {k: v for k, v in body.items() if k in FIELDS})
        try:
            uuid, _ = self._find(name)
        except NotFound:
            uuid = str(uuidlib.uuid4())
            create_named_entry(self.cs, WINDOW_CLASS, WINDOW_APP, uuid, name, entry)
            log.info("maintenance window %s (%s): created", uuid, name)
            return self.get(name), True
        self.cs.put_config(WINDOW_APP, uuid, entry)
        log.info("maintenance window %s (%s): replaced", uuid, name)
        return self.get(name), False

    def delete(self, name: str) -> str:
        """Delete window ``name`` (404 if there is none); its object's UUID."""
        uuid, _ = self._find(name)
        self.cs.delete_config(WINDOW_APP, uuid)
        self.cs.delete_object(uuid)
        log.info("maintenance window %s (%s): deleted", uuid, name)
        return uuid
