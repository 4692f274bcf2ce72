"""The console's maintenance windows: every window listed at ``/ui/window`` as ``GET
/v1/maintenance-window`` answers it (name, selector, schedule, zone, duration, open now or
the next opening), after the same permission check."""

from __future__ import annotations

from flask import g, render_template

from ..window_routes import require_window_read, window_service
from .pages import bp
from .session import signed_in


@bp.get("/window")
@signed_in
def windows() -> str:
    """Every maintenance window, by name."""
    require_window_read(g.console.caller)
    return render_template("windows.html", windows=window_service().list())
