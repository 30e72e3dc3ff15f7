"""The PostgreSQL provider (needs the ``postgres`` extra: psycopg and psycopg-pool)."""

from acta.provider.postgres.provider import PostgresProvider

__all__ = ["PostgresProvider"]
