-- Version 2: identities per principal and kind (Auth's identity records, e.g. a Kerberos
-- UPN): one per principal and kind, and a name names one principal per kind.
CREATE TABLE identity (
    principal TEXT NOT NULL,
    kind      TEXT NOT NULL,
    name      TEXT NOT NULL,
    PRIMARY KEY (principal, kind),
    UNIQUE (kind, name)
);
