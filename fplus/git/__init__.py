"""Git, one home for it: the bare repositories on disk (:mod:`.bare`), the pygit2 reader and
writers (:mod:`.repo`), and the hosts that keep the cluster repos (:mod:`.hosts`: our Git
server, a Gitea) behind one Protocol (:mod:`.store`). Used by the Git server and the
Cluster Manager alike; imports neither. Nothing else imports pygit2."""
