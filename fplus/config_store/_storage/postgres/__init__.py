"""PostgreSQL storage: several Config Store replicas on one database (:mod:`.storage`), its
statements (:mod:`.statements`), group commit (:mod:`.group_commit`), the change log other
replicas follow (:mod:`.change_feed`), psycopg's wait under gevent (:mod:`.green_wait`) and the
schema's migrations (:mod:`.migrations`, the SQL under ``sql/``). Imported only where
PostgreSQL is used (psycopg)."""
