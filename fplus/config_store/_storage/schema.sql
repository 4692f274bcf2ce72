-- Config Store schema (SQLite; PostgreSQL's is pg/*.sql). Objects and their class structure, config entries, and the
-- Auth subset (principals with password hashes, grants).
CREATE TABLE IF NOT EXISTS object (
    uuid    TEXT PRIMARY KEY,
    rank    INTEGER NOT NULL,
    class   TEXT,                      -- primary class; NULL only for the top rank root
    owner   TEXT NOT NULL,
    deleted INTEGER NOT NULL DEFAULT 0,
    etag    TEXT NOT NULL              -- etag of the object's Registration entry
);
CREATE TABLE IF NOT EXISTS membership (
    class  TEXT NOT NULL,
    member TEXT NOT NULL,
    PRIMARY KEY (class, member)
);
CREATE INDEX IF NOT EXISTS membership_by_member ON membership (member);
CREATE TABLE IF NOT EXISTS subclass (
    class    TEXT NOT NULL,
    subclass TEXT NOT NULL,
    PRIMARY KEY (class, subclass)
);
CREATE INDEX IF NOT EXISTS subclass_by_subclass ON subclass (subclass);
CREATE TABLE IF NOT EXISTS config (
    app    TEXT NOT NULL,
    object TEXT NOT NULL,
    json   TEXT NOT NULL,
    etag   TEXT NOT NULL,
    PRIMARY KEY (app, object)
);
CREATE INDEX IF NOT EXISTS config_by_object ON config (object);
CREATE TABLE IF NOT EXISTS principal (
    uuid           TEXT PRIMARY KEY,
    name           TEXT NOT NULL UNIQUE,
    password_hash  TEXT,
    previous_hash  TEXT,                -- a rotated-out password still accepted for a while
    previous_until REAL                 -- ... until this time (seconds since the epoch)
);
-- Names are unique regardless of case, checked by the writer (a unique index here would stop
-- a database made before that rule, holding e.g. "nobody" and "Nobody", from opening).
CREATE INDEX IF NOT EXISTS principal_by_lower_name ON principal (lower(name));
-- Identities per principal and kind (Auth's identity records, e.g. a Kerberos UPN): one per
-- principal and kind, and a name names one principal per kind.
CREATE TABLE IF NOT EXISTS identity (
    principal TEXT NOT NULL,
    kind      TEXT NOT NULL,
    name      TEXT NOT NULL,
    PRIMARY KEY (principal, kind),
    UNIQUE (kind, name)
);
CREATE TABLE IF NOT EXISTS acl_grant (
    uuid       TEXT PRIMARY KEY,
    principal  TEXT NOT NULL,
    permission TEXT NOT NULL,
    target     TEXT NOT NULL,
    plural     INTEGER NOT NULL DEFAULT 0,
    object     TEXT                    -- extension: restrict an app grant to one entry
);
CREATE INDEX IF NOT EXISTS acl_grant_by_principal ON acl_grant (principal);
-- Issued Bearer tokens by the SHA-256 of their text, so a restart keeps them valid.
CREATE TABLE IF NOT EXISTS token (
    digest       TEXT PRIMARY KEY,
    principal    TEXT NOT NULL,
    tag          TEXT NOT NULL,        -- which password hash the login proved
    refused_from REAL NOT NULL         -- seconds since the epoch
);
CREATE INDEX IF NOT EXISTS token_by_principal ON token (principal);
-- The Auth audit log: one row per change made through the Auth API (principals, passwords,
-- grants, identities, groups) written in the change's own transaction, and one per refused
-- change (403). Only ever inserted: names and uuids, never a password, hash or token.
CREATE TABLE IF NOT EXISTS cs_audit (
    seq            INTEGER PRIMARY KEY AUTOINCREMENT,
    at             REAL NOT NULL,          -- seconds since the epoch
    request_id     TEXT NOT NULL,
    principal      TEXT,
    principal_name TEXT,
    action         TEXT NOT NULL,
    target_kind    TEXT NOT NULL,
    target         TEXT,
    target_name    TEXT,
    outcome        TEXT NOT NULL,          -- ok | refused
    status         INTEGER NOT NULL,
    detail         TEXT                    -- a JSON object of names and uuids, or NULL
);
CREATE INDEX IF NOT EXISTS cs_audit_by_principal ON cs_audit (principal, seq);
CREATE INDEX IF NOT EXISTS cs_audit_by_target ON cs_audit (target, seq);
CREATE INDEX IF NOT EXISTS cs_audit_by_at ON cs_audit (at);
