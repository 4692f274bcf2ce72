"""Helm chart templates as the API shows them, and imports into the central repos."""
