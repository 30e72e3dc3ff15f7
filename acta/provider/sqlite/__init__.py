"""The embedded SQLite provider."""

from acta.provider.sqlite.provider import SqliteProvider

__all__ = ["SqliteProvider"]
