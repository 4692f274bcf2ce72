"""What should exist: every cluster's configuration entry, the Flux template, and what the
cluster API asked for (redeploy, forced delete).

Fed by the reconciler's notify subscriptions; read by the commissioning and teardown steps.
The one place that decides which Flux template applies.
"""

from __future__ import annotations

import copy
import threading
from typing import Any

from config_store import uuids
from config_store.client import SearchState

from ..vocabulary import CONFIG_APP
from .configdb import ConfigDB

TEMPLATE_APP = uuids.App.FluxTemplate


class DesiredState:
    """The newest configuration entries (with etags) and Flux template (thread-safe)."""

    def __init__(self, cs: ConfigDB) -> None:
        self.cs = cs
        self._lock = threading.Lock()
        self._configs: SearchState | None = None
        self._template: Any = None
        self._template_seen = False
        self._requests: dict[str, Any] = {}

    def forget(self) -> None:
        """Back to knowing nothing (the next delivery is a first one again)."""
        with self._lock:
            self._configs, self._template, self._template_seen = None, None, False
            self._requests = {}

    @property
    def known(self) -> bool:
        """True once the first full set of configuration entries arrived."""
        return self._configs is not None

    def clusters(self) -> list[str]:
        """Every configured cluster."""
        with self._lock:
            return list(self._configs or {})

    def replace_configs(self, state: SearchState) -> set[str]:
        """Take a new full set of entries; return the clusters whose entry appeared, went or
        changed (by etag; by value without one). The first set counts as all changed."""
        with self._lock:
            previous, self._configs = self._configs, state
        if previous is None:
            return set(state)
        return {k for k in state.keys() | previous.keys()
                if k not in state or k not in previous
                or state.etags.get(k) != previous.etags.get(k)
                or (state.etags.get(k) is None and state[k] != previous[k])}

    def replace_template(self, template: Any) -> bool:
        """Take the Flux template; True when it changed after the first delivery."""
        with self._lock:
            self._template = template
            first, self._template_seen = not self._template_seen, True
        return not first

    def entry(self, cluster: str) -> tuple[Any, str | None] | None:
        """The cluster's entry and etag as last delivered; None if it is not configured.

        The entry is a copy (steps may normalise it); the etag is None when the delivery
        carried none, and then the entry is read afresh.
        """
        with self._lock:
            configs = self._configs or SearchState({}, {})
            if cluster not in configs:
                return None
            config, etag = copy.deepcopy(configs[cluster]), configs.etags.get(cluster)
        if etag is None:
            config, etag = self.cs.get_config_with_etag(CONFIG_APP, cluster)
            if config is None:  # deleted since the notification; the next one says so
                return None
        return config, etag

    def flux_template(self) -> Any:
        """The Flux template: as last delivered, or read now if none was delivered yet."""
        with self._lock:
            template = self._template
        if template is None:
            template = self.cs.get_config(TEMPLATE_APP, TEMPLATE_APP)
        return template

    def replace_requests(self, state: SearchState) -> set[str]:
        """Take the cluster API's requests; return the clusters whose request changed."""
        with self._lock:
            previous, self._requests = self._requests, dict(state)
        return {k for k in state.keys() | previous.keys() if state.get(k) != previous.get(k)}

    def request(self, cluster: str) -> dict[str, Any]:
        """What the cluster API asked for ``cluster`` (``{}``: nothing)."""
        with self._lock:
            found = self._requests.get(cluster)
        return dict(found) if isinstance(found, dict) else {}
