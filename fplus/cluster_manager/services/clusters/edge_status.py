"""An edge's Edge cluster status entry, read without trusting it to be readable.

Edge Sync writes this entry with the edge's own credentials, so the edge decides what is in
it. An entry the Config Store cannot serve (it answers an error for that one entry) or the
client cannot parse (nested too deeply) must not turn the routes that read it into 500s: it
is :class:`EdgeStatusUnreadable` (502, naming the entry), and only that cluster is affected.
"""

from __future__ import annotations

from fplus.config_store.client import ConfigStoreClient, ConfigStoreError
from fplus.jsontypes import is_object

from ...model.apps_and_roles import EDGE_APP
from ..errors import BadGateway

_OURS = (0, 401, 403, 429)
"""Statuses that say nothing about the entry (no answer, our credentials, rate limits)."""


class EdgeStatusUnreadable(BadGateway):
    """The cluster's Edge cluster status entry cannot be read."""


def read_edge_status(cs: ConfigStoreClient, cluster: str) -> dict[str, object] | None:
    """The cluster's Edge cluster status entry if it is a JSON object, None if it is absent or
    not an object; :class:`EdgeStatusUnreadable` if it cannot be read."""
    try:
        entry = cs.get_config(EDGE_APP, cluster)
    except RecursionError:
        raise _unreadable(cluster, "it nests too deeply to parse") from None
    except ConfigStoreError as exc:
        if exc.status in _OURS:
            raise
        raise _unreadable(cluster, f"the Config Store answers {exc.status} for it") from None
    return entry if is_object(entry) else None


def _unreadable(cluster: str, why: str) -> EdgeStatusUnreadable:
    return EdgeStatusUnreadable(
        f"the edge's status entry of cluster {cluster} is unreadable: {why}; an administrator "
        f"can replace or delete it (/v2/app/{EDGE_APP}/object/{cluster})")
