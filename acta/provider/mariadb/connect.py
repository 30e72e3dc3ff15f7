"""Connecting to MariaDB (and MySQL 8.0+): the URL, the settings of acta's sessions, failures.

Every connection acta opens (and nothing else: a caller's connection is left as it is) runs
with the same session settings, sent once when it connects:

- ``READ COMMITTED``: a claim's ``FOR UPDATE SKIP LOCKED`` and the guarded writes see the
  latest committed rows, as on PostgreSQL; REPEATABLE READ would also take gap locks that make
  concurrent enqueues and claims deadlock.
- a strict ``sql_mode`` (``STRICT_ALL_TABLES`` and friends): a value too long for its column is
  an error, never silently truncated, whatever the server's default mode is; ``PIPES_AS_CONCAT``
  lets the statements write ``||`` as the other dialects do.
- ``time_zone = '+00:00'``: instants are ``DATETIME(3)`` in UTC (``UTC_TIMESTAMP(3)``), and the
  session zone then also leaves any ``NOW()`` in UTC.
- ``utf8mb4``: the ledger's tables use ``utf8mb4_bin``, so refs and keys compare byte by byte.

Messages never show the password.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import unquote, urlsplit

from acta.errors import ConfigurationError, DatabaseUnavailableError

SCHEMES = ("mariadb://", "mysql://", "mariadb+pymysql://", "mysql+pymysql://")
DEFAULT_PORT = 3306

SQL_MODE = (
    "STRICT_ALL_TABLES,NO_ZERO_IN_DATE,NO_ZERO_DATE,ERROR_FOR_DIVISION_BY_ZERO,"
    "NO_ENGINE_SUBSTITUTION,PIPES_AS_CONCAT"
)
SESSION = f"SET SESSION sql_mode = '{SQL_MODE}', SESSION time_zone = '+00:00'"
ISOLATION = "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED"

# Server error numbers after which the whole verb runs again on the same connection.
_RETRY = frozenset({1213, 1205})  # ER_LOCK_DEADLOCK, ER_LOCK_WAIT_TIMEOUT
# The connection is gone (server restart, kill, network): take a fresh one.
_RECONNECT = frozenset(
    {
        1053,  # ER_SERVER_SHUTDOWN
        1927,  # ER_CONNECTION_KILLED (MariaDB)
        2003,  # CR_CONN_HOST_ERROR
        2006,  # CR_SERVER_GONE_ERROR
        2013,  # CR_SERVER_LOST
        2055,  # CR_SERVER_LOST_EXTENDED
        4031,  # ER_CLIENT_INTERACTION_TIMEOUT (MariaDB)
    }
)

Retry = Literal["retry", "reconnect"]


@dataclass(frozen=True, slots=True)
class Target:
    """A parsed ``mariadb://`` or ``mysql://`` URL."""

    host: str
    port: int
    user: str
    password: str | None
    database: str | None

    @classmethod
    def parse(cls, url: str) -> Target:
        text = url.strip()
        if not text.startswith(SCHEMES):
            raise ConfigurationError(
                f"a MariaDB target is a URL starting with {' or '.join(SCHEMES[:2])}"
            )
        try:
            parts = urlsplit(text)
            port = parts.port or DEFAULT_PORT
        except ValueError as exc:
            raise ConfigurationError(
                f"invalid MariaDB URL ({exc}); write mariadb://user:password@host:port/database"
            ) from None
        database = unquote(parts.path.lstrip("/")) or None
        return cls(
            host=parts.hostname or "127.0.0.1",
            port=port,
            user=unquote(parts.username or "root"),
            password=unquote(parts.password) if parts.password else None,
            database=database,
        )

    @property
    def place(self) -> str:
        """``host:port``, for messages."""
        return f"{self.host}:{self.port}"

    def public_url(self) -> str:
        """The URL without its password, for commands users paste."""
        tail = f"/{self.database}" if self.database else ""
        return f"mariadb://{self.user}@{self.host}:{self.port}{tail}"

    def scrub(self, text: str) -> str:
        return text.replace(self.password, "***") if self.password else text

    def connect_kwargs(self, connect_timeout: float) -> dict[str, Any]:
        """Keyword arguments of PyMySQL's ``connect`` for every connection acta opens."""
        kwargs: dict[str, Any] = {
            "host": self.host,
            "port": self.port,
            "user": self.user,
            "password": self.password or "",
            "charset": "utf8mb4",
            "autocommit": False,
            "connect_timeout": max(1, round(connect_timeout)),
            "init_command": SESSION,
            # Affected rows count the rows a statement matched, as on the other dialects
            # (MariaDB otherwise counts only rows whose values changed).
            "client_flag": 2,  # CLIENT.FOUND_ROWS
        }
        if self.database:
            kwargs["database"] = self.database
        return kwargs

    def unavailable(
        self, exc: BaseException, doing: str = "connect to"
    ) -> DatabaseUnavailableError:
        cause = self.scrub(" ".join(str(exc).split())) or type(exc).__name__
        return DatabaseUnavailableError(f"cannot {doing} MariaDB at {self.place}: {cause}")


def error_code(exc: BaseException) -> int | None:
    """The server or client error number of a PyMySQL error, if it has one."""
    args = getattr(exc, "args", ())
    if args and isinstance(args[0], int):
        return args[0]
    return None


def retry_kind(exc: BaseException) -> Retry | None:
    """Whether a failed verb may run again whole, and whether it needs a fresh connection.

    A deadlock or a lock wait that timed out rolls the verb's transaction back (acta rolls back
    the whole transaction, not only the statement, whatever ``innodb_rollback_on_timeout``
    says), so it runs again from the start. A lost connection is handled as on PostgreSQL
    (acta.provider.postgres.connect.retry_kind): nothing of the verb committed unless the
    COMMIT itself was in flight, and acta's writes are safe to repeat then.
    """
    import pymysql

    if not isinstance(exc, pymysql.err.Error):
        return None
    code = error_code(exc)
    if code in _RETRY:
        return "retry"
    if code in _RECONNECT:
        return "reconnect"
    if isinstance(exc, pymysql.err.InterfaceError):
        return "reconnect"  # PyMySQL raises it on a connection it already knows is closed
    return None
