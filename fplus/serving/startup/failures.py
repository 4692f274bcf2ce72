"""One line instead of a traceback when a service cannot start for want of its Config Store.

Knows nothing of the client library: failures are told apart by HTTP status, as the client's
errors carry it (0 when no answer arrived at all).
"""

from __future__ import annotations

import os


def require_credentials(prog: str) -> None:
    """SystemExit naming FPLUS_USER / FPLUS_PASSWORD when no password is in the environment.

    The client library reads ``FPLUS_PASSWORD``, falling back to ``FPLUS_ADMIN_PASSWORD``.
    """
    if not (os.environ.get("FPLUS_PASSWORD") or os.environ.get("FPLUS_ADMIN_PASSWORD")):
        raise SystemExit(f"{prog}: no Config Store credentials: set FPLUS_USER and "
                         "FPLUS_PASSWORD (a Config Store administrator)")


def config_store_failure(prog: str, url: str, status: int, detail: str) -> SystemExit:
    """The one line for the Config Store at ``url`` failing a start-up request with ``status``.

    0: nothing answered; 401: wrong credentials; 403: not an administrator; else ``detail``.
    """
    user = os.environ.get("FPLUS_USER") or "admin"
    if status == 0:
        why = (f"cannot reach the Config Store at {url}: is it running? "
               "check --config-store / CONFIG_STORE_URL")
    elif status == 401:
        why = (f"wrong username or password for {url}: check FPLUS_USER ({user}) "
               "and FPLUS_PASSWORD")
    elif status == 403:
        why = f"FPLUS_USER {user} may not set up the Config Store at {url}: use an administrator"
    else:
        why = f"the Config Store at {url} failed at start-up: {' '.join(detail.split())}"
    return SystemExit(f"{prog}: {why}")
