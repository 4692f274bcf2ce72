"""Sealed secrets: seal to the pinned key, commit, re-seal when the pin changes."""
