"""Storage adapters for the Config Store (SQLite today)."""

from .sqlite import GrantRow, ObjectRow, Reader, SQLiteStorage, Writer

__all__ = ["GrantRow", "ObjectRow", "Reader", "SQLiteStorage", "Writer"]
