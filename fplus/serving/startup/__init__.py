"""Starting a service: gevent's monkey-patching, logging, the Config Store log-in and seeding
of a central service, and its start-up failures as one line."""
