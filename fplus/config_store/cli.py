"""``config-store``: the entry point of the Config Store's command (:mod:`.main`), on gevent.

gevent's monkey-patching comes before any import of the service (psycopg picks
a gevent-friendly wait when it is imported), so the command
is imported here, after it. ``python -m fplus.config_store.cli`` runs it too.
"""

from __future__ import annotations

from fplus.serving.startup.green import patch_all


def main(argv: list[str] | None = None) -> None:
    """Entry point: patch, then run the command."""
    patch_all()
    from .main import main as command  # after patching, as every import of the service

    command(argv)


if __name__ == "__main__":
    main()
