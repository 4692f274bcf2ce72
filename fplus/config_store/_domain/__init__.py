"""Config Store domain logic. Never imports Flask.

From the bottom up: :mod:`.common` (errors, canonical JSON, change events), :mod:`.core` (the
shared state: object graph, ACL, credentials, write transactions, replication),
:mod:`.configdb` (ConfigDB: objects, entries, schemas, dumps), :mod:`.auth` (Auth: grants,
identities, principals, enrolment; a principal is a ConfigDB object), :mod:`.notify`
(notify/v2 over both), and :mod:`.store`, which opens a Config Store. The layers contract in
setup.cfg keeps that order.
"""
