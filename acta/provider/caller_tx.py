"""The driver connection behind a caller's transaction object, for transactional enqueue.

An application may enqueue inside the transaction it already has open, so the job commits or
rolls back with its business rows. It hands acta whatever it holds: a driver connection
(``sqlite3.Connection``, psycopg ``Connection``/``AsyncConnection``) is used as is; a SQLAlchemy
``Connection``/``Session`` (sync) or ``AsyncConnection``/``AsyncSession`` is unwrapped to its
driver connection here. SQLAlchemy is imported only when the object is one of its types, so
applications without it pay nothing.

SQLAlchemy must know its transaction has begun, or its ``commit()`` would do nothing and the
job would be rolled back when the connection goes back to its pool. Unwrapping therefore
begins the SQLAlchemy transaction when none is open: a Session does that itself in
``connection()``, a Connection gets ``begin()``. The caller still commits or rolls back.
"""

from __future__ import annotations

from typing import Any

from acta.errors import ConfigurationError


def _is_sqlalchemy(tx: object) -> bool:
    return type(tx).__module__.startswith("sqlalchemy.")


def _is_async_sqlalchemy(tx: object) -> bool:
    return type(tx).__module__.startswith("sqlalchemy.ext.asyncio")


def unwrap(tx: object) -> object:
    """The driver connection for a sync call; non-SQLAlchemy objects come back unchanged."""
    if not _is_sqlalchemy(tx):
        return tx
    if _is_async_sqlalchemy(tx):
        raise ConfigurationError(
            f"an async SQLAlchemy {type(tx).__name__} was given to a sync call; "
            "use the async twin (enqueue_async)"
        )
    from sqlalchemy.engine import Connection
    from sqlalchemy.orm import Session

    if isinstance(tx, Session):
        conn = tx.connection()  # begins the session's transaction if it had none
    elif isinstance(tx, Connection):
        conn = tx
        if not conn.in_transaction():
            conn.begin()
    else:
        raise ConfigurationError(
            f"cannot enqueue on a SQLAlchemy {type(tx).__name__}; pass a Connection or Session"
        )
    return _driver(conn.connection.driver_connection, tx)


async def unwrap_async(tx: object) -> object:
    """The driver connection for an async call (sync objects are accepted too)."""
    if not _is_async_sqlalchemy(tx):
        return unwrap(tx)
    from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

    if isinstance(tx, AsyncSession):
        conn = await tx.connection()
    elif isinstance(tx, AsyncConnection):
        conn = tx
        if not conn.in_transaction():
            await conn.begin()
    else:
        raise ConfigurationError(
            f"cannot enqueue on a SQLAlchemy {type(tx).__name__}; "
            "pass an AsyncConnection or AsyncSession"
        )
    raw = await conn.get_raw_connection()
    return _driver(raw.driver_connection, tx)


def _driver(driver: Any, tx: object) -> object:
    if driver is None:
        raise ConfigurationError(
            f"the SQLAlchemy {type(tx).__name__} has no open driver connection (invalidated?)"
        )
    return driver
