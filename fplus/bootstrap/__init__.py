"""The POSIX sh bootstrap script an edge cluster is installed with.

``build_script(entry, files)`` packs a rendered Bootstrap script entry (its files and wrapper)
and the per-cluster files (``self-link.yaml``, ``credentials.yaml``, ``flux-system.yaml``) into
one script; ``credentials_manifest`` writes the credential Secrets for ``credentials.yaml``.
This package imports nothing of the project's.
"""

from __future__ import annotations

from .credentials import credentials_manifest
from .errors import BootstrapError
from .script import PLACEHOLDER, Script, build_script, prepare_script

__all__ = ["PLACEHOLDER", "BootstrapError", "Script", "build_script", "credentials_manifest",
           "prepare_script"]
