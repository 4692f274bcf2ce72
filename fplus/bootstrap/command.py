"""The one-line POSIX sh command that runs a cluster's bootstrap script next to its edge, as
``fplus cluster bootstrap`` and the console print it."""

from __future__ import annotations

import hashlib

CA_FILE = "fplus-ca.crt"
"""Where the pinned command keeps the CA it fetched (public: a CA certificate)."""


def quoted(text: str) -> str:
    """``text`` as one POSIX sh word."""
    return "'" + text.replace("'", "'\\''") + "'"


def bootstrap_command(url: str, ca_url: str, ca: bytes | None) -> str:
    """The command that runs the script at ``url``. No ``curl -f``: a refusal's body is a
    script that prints the server's reason and exits 1. With a private CA (``ca``), the CA
    is fetched from ``ca_url`` first and its SHA-256, named in the command, checked before
    ``curl --cacert`` fetches anything that runs."""
    if ca is None:
        return f"curl -sS {quoted(url)} | sh"
    digest = hashlib.sha256(ca).hexdigest()
    return (f"curl -ksS -o {CA_FILE} {quoted(ca_url)} && "
            f"echo '{digest}  {CA_FILE}' | sha256sum -c - && "
            f"curl -sS --cacert {CA_FILE} {quoted(url)} | sh")
