-- Version 3: the Auth audit log (schema.sql's cs_audit): one row per change made through the
-- Auth API, written in the change's own transaction, and one per refused change (403). Only
-- ever inserted: names and uuids, never a password, hash or token. Writes are serialised,
-- so seq counts up in commit order.
CREATE TABLE cs_audit (
    seq            BIGSERIAL PRIMARY KEY,
    at             DOUBLE PRECISION NOT NULL,
    request_id     TEXT NOT NULL,
    principal      TEXT,
    principal_name TEXT,
    action         TEXT NOT NULL,
    target_kind    TEXT NOT NULL,
    target         TEXT,
    target_name    TEXT,
    outcome        TEXT NOT NULL,
    status         INTEGER NOT NULL,
    detail         TEXT
);
CREATE INDEX cs_audit_by_principal ON cs_audit (principal, seq);
CREATE INDEX cs_audit_by_target ON cs_audit (target, seq);
CREATE INDEX cs_audit_by_at ON cs_audit (at);
