"""Several Config Store replicas on one PostgreSQL database: cross-replica behaviour and faults."""
