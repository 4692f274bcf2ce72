"""Client library for the Config Store: the only way other packages reach it.

Services (Git server, Cluster Manager, Edge Sync, ...) talk to the Config Store over
HTTP with :class:`ConfigStoreClient` and follow changes over notify/v2 with
:class:`NotifyClient`; they never import the server's own modules.

Example::

    from fplus.config_store.client import client_from_env, NotifyClient

    cs = client_from_env()
    cs.put_config(app, obj, {"name": "x"})
    with NotifyClient(cs) as notify:
        notify.watch(app, obj, print)

To test code that uses the client without a server, pass ``send=``: any :data:`Send`
callable, such as a :class:`MockTransport` (see :mod:`fplus.config_store.client.mock`).
"""

from __future__ import annotations

from ._fold import SearchDelta, SearchMirror, SearchState
from ._transport import Credentials, Response, Send
from .access import Access, Caller, TTLCache
from .batch import BatchOp, BatchResult
from .errors import (
    BadRequest,
    ConfigStoreError,
    Conflict,
    ConnectionFailed,
    Forbidden,
    Gone,
    MethodNotAllowed,
    NotFound,
    PreconditionFailed,
    ServerError,
    Unauthorized,
    Unprocessable,
    UnsupportedMediaType,
)
from .http import ConfigStoreClient, as_admin, client_from_env
from .mock import MockTransport, Request, reply
from .notify import NotifyClient
from .service_account import Grant, PasswordFileMissing, ensure_service_principal
from .subscription import Subscription

__all__ = [
    "Access",
    "BadRequest",
    "BatchOp",
    "BatchResult",
    "Caller",
    "ConfigStoreClient",
    "ConfigStoreError",
    "Conflict",
    "ConnectionFailed",
    "Credentials",
    "Forbidden",
    "Gone",
    "Grant",
    "MethodNotAllowed",
    "MockTransport",
    "NotFound",
    "NotifyClient",
    "PasswordFileMissing",
    "PreconditionFailed",
    "Request",
    "Response",
    "SearchDelta",
    "SearchMirror",
    "SearchState",
    "Send",
    "ServerError",
    "Subscription",
    "TTLCache",
    "Unauthorized",
    "Unprocessable",
    "UnsupportedMediaType",
    "as_admin",
    "client_from_env",
    "ensure_service_principal",
    "reply",
]
