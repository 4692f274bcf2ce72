"""The Git server's ``/metrics``: its HTTP requests, and pushes and fetches counted where
``git http-backend`` is run for them (so a refused request is not one)."""

from __future__ import annotations

from flask import current_app
from prometheus_client import Counter

from fplus.serving.http.metrics import HttpMetrics


class GitMetrics(HttpMetrics):
    """The requests metrics, and ``git_server_pushes_total``/``git_server_fetches_total``
    by the status http-backend answered."""

    def __init__(self) -> None:
        super().__init__("git_server")
        self.pushes = Counter("git_server_pushes_total",
                              "Pushes (git-receive-pack) run by http-backend, by its status.",
                              ["code"], registry=self.registry)
        self.fetches = Counter("git_server_fetches_total",
                               "Fetches and clones (git-upload-pack) run by http-backend, by "
                               "its status.", ["code"], registry=self.registry)


def git_metrics() -> GitMetrics:
    """The current app's metrics."""
    return current_app.extensions["http_metrics"]
