"""Git server domain: repo registry, access checks, bare-repo storage. Never imports Flask."""
