"""The one exception this package raises."""

from __future__ import annotations


class BootstrapError(ValueError):
    """A bootstrap script or credentials manifest that cannot be built as asked."""
