"""Git server: smart-HTTP Git (``git http-backend``) with per-repo ACLs from the Config Store."""
