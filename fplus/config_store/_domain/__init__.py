"""Config Store domain logic: the object model, entries, ACLs, notify. Never imports Flask."""
