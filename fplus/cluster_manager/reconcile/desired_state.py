"""What should exist: every cluster's configuration entry, the Flux templates, and what the
cluster API asked for (redeploy, forced delete).

Fed by the reconciler's notify subscriptions; read by the commissioning and teardown steps.
The one place that decides which Flux template applies: the entry of the Flux template app
the cluster's ``fluxTemplate`` names (a pin: a canary, or a cluster rollout's step), else
the default one (the app's own uuid).
"""

from __future__ import annotations

import copy
import threading

from fplus.config_store import uuids
from fplus.config_store.client import SearchDelta, SearchMirror

from ..changes.rendering import template_key
from ..model.apps_and_roles import CONFIG_APP
from .configdb import ConfigDB

TEMPLATE_APP = uuids.App.FluxTemplate


class DesiredState:
    """The newest configuration entries (with etags) and Flux template (thread-safe)."""

    def __init__(self, cs: ConfigDB) -> None:
        self.cs = cs
        self._lock = threading.Lock()
        self._configs = SearchMirror()
        self._known = False
        self._templates = SearchMirror()
        self._templates_seen = False
        self._requests = SearchMirror()

    def forget(self) -> None:
        """Back to knowing nothing (the next delivery is a first one again)."""
        with self._lock:
            self._configs, self._known = SearchMirror(), False
            self._templates, self._templates_seen = SearchMirror(), False
            self._requests = SearchMirror()

    @property
    def known(self) -> bool:
        """True once the first full set of configuration entries arrived."""
        return self._known

    def clusters(self) -> list[str]:
        """Every configured cluster."""
        with self._lock:
            return list(self._configs.children)

    def apply_configs(self, delta: SearchDelta) -> set[str]:
        """Take a change of the configuration entries; return the clusters whose entry
        appeared, went or changed (by etag; by value without one). Costs what the change
        names, except a full set (the first, and one after each reconnection), which is
        compared with everything known. A refusal is ignored: no access is not no clusters.
        """
        if delta.refused:
            return set()
        with self._lock:
            self._known = self._known or delta.full
            return self._configs.apply(delta)

    def replace_template(self, template: object) -> bool:
        """Take the default Flux template; True when it changed after the first delivery."""
        delta = SearchDelta(full=False, children={TEMPLATE_APP: template})
        return bool(self.apply_templates(delta))

    def apply_templates(self, delta: SearchDelta) -> set[str]:
        """Take a change of the Flux template app's entries; return the keys that changed
        (none at the first delivery: nothing was rendered with another yet)."""
        if delta.refused:
            return set()
        with self._lock:
            changed = self._templates.apply(delta)
            first, self._templates_seen = not self._templates_seen, True
        return set() if first else changed

    def pinned(self, template: str) -> set[str]:
        """The clusters whose template is ``template`` (the default's: those unpinned)."""
        with self._lock:
            configs = dict(self._configs.children)
        return {c for c, config in configs.items()
                if ((config.get("fluxTemplate") if isinstance(config, dict) else None)
                    or TEMPLATE_APP) == template}

    def entry(self, cluster: str) -> tuple[object, str | None] | None:
        """The cluster's entry and etag as last delivered; None if it is not configured.

        The entry is a copy (steps may normalise it); the etag is None when the delivery
        carried none, and then the entry is read afresh.
        """
        with self._lock:
            if cluster not in self._configs.children:
                return None
            config = copy.deepcopy(self._configs.children[cluster])
            etag = self._configs.etags.get(cluster)
        if etag is None:
            config, etag = self.cs.get_config_with_etag(CONFIG_APP, cluster)
            if config is None:  # deleted since the notification; the next one says so
                return None
        return config, etag

    def flux_template(self, config: object = None) -> object:
        """The Flux template the cluster configuration ``config`` renders with (its pinned
        ``fluxTemplate``, else the default): as last delivered, or read now if none was
        delivered yet (None: there is none)."""
        key = template_key(config)
        with self._lock:
            template = self._templates.children.get(key)
        if template is None:
            template = self.cs.get_config(TEMPLATE_APP, key)
        return template

    def apply_requests(self, delta: SearchDelta) -> set[str]:
        """Take a change of the cluster API's requests; return the clusters whose request
        changed."""
        if delta.refused:
            return set()
        with self._lock:
            return self._requests.apply(delta)

    def request(self, cluster: str) -> dict[str, object]:
        """What the cluster API asked for ``cluster`` (``{}``: nothing)."""
        with self._lock:
            found = self._requests.children.get(cluster)
        return dict(found) if isinstance(found, dict) else {}
