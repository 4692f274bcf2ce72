"""The hosts of the cluster repos, each a :class:`fplus.git.store.RepoStore`: our Git server
(:mod:`.ours`), or a Gitea (:mod:`.gitea` over :mod:`.gitea_api`); :mod:`.host` says which and
where, :mod:`.choose` builds it."""
