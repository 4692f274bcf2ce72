"""Start the real services on free loopback ports in temp dirs, and drive them.

Shared by ``tests/`` and ``bench/``; not part of the installed product. Services run in
their own process groups and are cleaned up by PID. Imports only the public APIs of our
packages (never ``tests``, never a private ``_`` module); see the import-linter contracts.
"""
