"""Databases of a service: ``--database`` URLs in messages, and SQLite files only it reads."""
