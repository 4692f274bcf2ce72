"""Storage adapters for the Config Store (SQLite today)."""

from .dbfile import UnusableDatabase
from .sqlite import GrantRow, LoginRow, ObjectRow, Reader, SQLiteStorage, Writer

__all__ = ["GrantRow", "LoginRow", "ObjectRow", "Reader", "SQLiteStorage", "UnusableDatabase",
           "Writer"]
