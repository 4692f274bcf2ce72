-- Config Store schema on PostgreSQL, version 1: the tables of schema.sql (SQLite), plus the
-- change log other replicas follow. Entries keep their canonical JSON text (ETags compare
-- it) and a JSONB copy searches are evaluated on (NULL for the rare document JSONB cannot
-- hold, a string with a NUL character: such entries are checked by the server instead).
CREATE TABLE object (
    uuid    TEXT PRIMARY KEY,
    rank    INTEGER NOT NULL,
    class   TEXT,
    owner   TEXT NOT NULL,
    deleted INTEGER NOT NULL DEFAULT 0,
    etag    TEXT NOT NULL
);
CREATE TABLE membership (
    class  TEXT NOT NULL,
    member TEXT NOT NULL,
    PRIMARY KEY (class, member)
);
CREATE INDEX membership_by_member ON membership (member);
CREATE TABLE subclass (
    class    TEXT NOT NULL,
    subclass TEXT NOT NULL,
    PRIMARY KEY (class, subclass)
);
CREATE INDEX subclass_by_subclass ON subclass (subclass);
CREATE TABLE config (
    app    TEXT NOT NULL,
    object TEXT NOT NULL,
    json   TEXT NOT NULL,
    doc    JSONB,
    etag   TEXT NOT NULL,
    PRIMARY KEY (app, object)
);
CREATE INDEX config_by_object ON config (object);
CREATE TABLE principal (
    uuid           TEXT PRIMARY KEY,
    name           TEXT NOT NULL UNIQUE,
    password_hash  TEXT,
    previous_hash  TEXT,
    previous_until DOUBLE PRECISION
);
CREATE UNIQUE INDEX principal_by_lower_name ON principal (lower(name));
CREATE TABLE acl_grant (
    uuid       TEXT PRIMARY KEY,
    principal  TEXT NOT NULL,
    permission TEXT NOT NULL,
    target     TEXT NOT NULL,
    plural     INTEGER NOT NULL DEFAULT 0,
    object     TEXT
);
CREATE INDEX acl_grant_by_principal ON acl_grant (principal);
CREATE TABLE token (
    digest       TEXT PRIMARY KEY,
    principal    TEXT NOT NULL,
    tag          TEXT NOT NULL,
    refused_from DOUBLE PRECISION NOT NULL
);
CREATE INDEX token_by_principal ON token (principal);
-- What each committed write changed, in commit order (writes are serialised), ids only.
CREATE TABLE change_log (
    seq    BIGSERIAL PRIMARY KEY,
    origin TEXT NOT NULL,
    kind   TEXT NOT NULL,
    a      TEXT NOT NULL,
    b      TEXT NOT NULL DEFAULT '',
    etag   TEXT,
    at     TIMESTAMPTZ NOT NULL DEFAULT now()
);
-- Changes up to this seq were pruned: a replica behind it reloads everything.
CREATE TABLE change_log_pruned (
    id   INTEGER PRIMARY KEY CHECK (id = 1),
    upto BIGINT NOT NULL
);
INSERT INTO change_log_pruned (id, upto) VALUES (1, 0);
