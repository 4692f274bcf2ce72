"""The store's shared state: the in-memory object graph, the ACL (grants expanded per
principal) and credentials the ConfigDB and Auth parts both check, and the write transactions
that keep them in step with storage (:mod:`.state`); :mod:`.replication` follows other
replicas' writes into the same state."""
