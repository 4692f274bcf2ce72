"""``config-store``: the entry point of the Config Store's command (:mod:`.main`), on gevent.

gevent's monkey-patching comes before any import of the service (psycopg picks
a gevent-friendly wait when it is imported), so the command
is imported here, after it. ``python -m fplus.config_store.cli`` runs it too.
"""

from __future__ import annotations

from fplus.serving.startup.green import run_patched


def main(argv: list[str] | None = None) -> None:
    """Entry point: patch, then run the command (:mod:`.main`)."""
    run_patched(f"{__package__}.main", argv)


if __name__ == "__main__":
    main()
