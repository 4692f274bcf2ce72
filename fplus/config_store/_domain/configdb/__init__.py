"""ConfigDB: objects, ranks and classes, config entries with their ETags and schemas, v1
search, the seeded objects, and loading v2 dumps. Knows nothing of Auth's operations: access is
checked against the ACL the core keeps."""
