"""Connecting to PostgreSQL: the DSN, the settings of acta's connections, and failures.

Everything here is pure policy about connections; the provider owns the pools. Connections are
made pooler-safe (reliability rule 6): no server-side prepared statements
(``prepare_threshold=None``; the hot statements are PL/pgSQL functions instead, whose plans
the server keeps per backend by itself), no session state; the only startup setting acta adds is
``application_name`` so operators (and the connection-loss test) can tell acta's backends apart.
Messages never show a password: every text that leaves this module is built from the parsed
DSN without it, and the password is scrubbed from driver messages as well.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, Literal
from urllib.parse import quote

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.rows import RowMaker, dict_row

from acta.errors import ConfigurationError, DatabaseUnavailableError

_SCHEMES = ("postgresql+psycopg://", "postgresql+psycopg2://", "postgres://")
DEFAULT_APPLICATION_NAME = "acta"

# SQLSTATEs after which the whole verb runs again on the same or another connection.
_RETRY_STATES = frozenset({"40001", "40P01"})  # serialization_failure, deadlock_detected
# The server went away or is restarting: the connection is dead, take a fresh one.
_RECONNECT_STATES = frozenset({"57P01", "57P02", "57P03"})  # admin/crash shutdown, starting up

Retry = Literal["retry", "reconnect"]


class Target:
    """A parsed DSN: what to connect with, and how to name it without the password."""

    def __init__(self, dsn: str, application_name: str = DEFAULT_APPLICATION_NAME) -> None:
        text = dsn.strip()
        for scheme in _SCHEMES:
            if text.startswith(scheme):
                # SQLAlchemy-style and short schemes name the same server; libpq wants this one.
                text = "postgresql://" + text[len(scheme) :]
        try:
            params = conninfo_to_dict(text)
        except psycopg.ProgrammingError as exc:
            # libpq quotes the offending piece, which may be the password: keep only the shape.
            problem = re.sub(r'"[^"]*"', '"..."', _first_line(exc))
            raise ConfigurationError(
                f"invalid PostgreSQL DSN ({problem}); write postgresql://user@host:port/dbname "
                "or key=value pairs"
            ) from None
        self.params: dict[str, Any] = params
        self.password = str(params["password"]) if params.get("password") else None
        self.dsn = text
        self.host = str(params.get("host") or params.get("hostaddr") or "localhost")
        self.port = str(params.get("port") or "5432")
        self.dbname = str(params.get("dbname") or params.get("user") or "postgres")
        # A name the DSN sets wins; otherwise acta marks its own backends.
        self.application_name = str(params.get("application_name") or application_name)

    @property
    def place(self) -> str:
        """``host:port/dbname``, for messages."""
        return f"{self.host}:{self.port}/{self.dbname}"

    def public_dsn(self) -> str:
        """The DSN with the password removed, as a URL users can paste into a command."""
        params = {k: v for k, v in self.params.items() if k != "password"}
        if not self.dsn.startswith("postgresql://"):
            return make_conninfo("", **params)
        user = params.pop("user", None)
        host = params.pop("host", None)
        port = params.pop("port", None)
        dbname = params.pop("dbname", None)
        netloc = f"{quote(str(user), safe='')}@" if user else ""
        netloc += str(host or "")
        netloc += f":{port}" if port else ""
        url = f"postgresql://{netloc}/{quote(str(dbname), safe='') if dbname else ''}"
        if params:
            url += "?" + "&".join(f"{k}={quote(str(v), safe='')}" for k, v in params.items())
        return url

    def scrub(self, text: str) -> str:
        """``text`` with the password, if it appears, replaced by ``***``."""
        return text.replace(self.password, "***") if self.password else text

    def connect_kwargs(self, connect_timeout: float) -> dict[str, Any]:
        """Keyword arguments for every connection acta opens itself."""
        return {
            "autocommit": False,
            "prepare_threshold": None,  # no server-side prepared statements (pgbouncer)
            "application_name": self.application_name,
            # libpq counts whole seconds and treats values below 2 as 2.
            "connect_timeout": max(2, round(connect_timeout)),
        }

    def unavailable(
        self, exc: BaseException, doing: str = "connect to"
    ) -> DatabaseUnavailableError:
        """The error for a server that cannot be reached, naming the host and the cause."""
        cause = self.scrub(" ".join(str(exc).split())) or type(exc).__name__
        return DatabaseUnavailableError(f"cannot {doing} PostgreSQL at {self.place}: {cause}")


def retry_kind(exc: BaseException, conn: psycopg.BaseConnection[Any] | None) -> Retry | None:
    """Whether a failed verb may run again whole, and whether it needs a fresh connection.

    Nothing was committed when a statement fails, so the verb runs again from the start. A
    lost connection ("reconnect") during COMMIT, or during a statement run as its own
    transaction, is in doubt: the server may have committed and only the reply was lost. Such
    writes are safe to repeat: a worker write finds its guard already spent and, with no
    lease-lost event at its epoch, knows the spent guard is its own earlier commit
    (``acta.ledger.transition.apply_transition``, ``acta.ledger.claim.start``); a claim runs
    its ``Op.in_doubt`` probe first; registration and enqueue are keyed on their own ids.
    """
    if not isinstance(exc, psycopg.Error):
        return None
    state = exc.sqlstate or ""
    if state in _RETRY_STATES:
        return "retry"
    if state in _RECONNECT_STATES or state.startswith("08"):
        return "reconnect"
    if isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError) and (
        conn is None or conn.closed
    ):
        return "reconnect"
    return None


# The type of instant columns (timestamptz); acta stores no other date or time type.
_INSTANT_OIDS = frozenset({1184})


def utc_dict_row(cursor: Any) -> RowMaker[dict[str, Any]]:
    """Rows as dicts, with every instant as an aware UTC datetime.

    The driver returns instants in the session's TimeZone, which acta must not set (no session
    state); converting here gives the same values whatever the server's setting is.

    Names and types are read from the raw result, not from ``cursor.description``: that builds
    a column object per field on every statement, about 15 us of a one-row statement. acta's
    column names are plain ASCII, so decoding them needs no connection encoding.
    """
    result = cursor.pgresult
    if result is None or not result.nfields:
        return dict_row(cursor)  # no rows to make (psycopg's own answer for that case)
    fields = range(result.nfields)
    names = [result.fname(i).decode() for i in fields]
    instants = [names[i] for i in fields if result.ftype(i) in _INSTANT_OIDS]

    def make(values: Sequence[Any]) -> dict[str, Any]:
        return dict(zip(names, values, strict=True))

    if not instants:
        return make  # nothing to convert: skip the per-row scan

    def row(values: Sequence[Any]) -> dict[str, Any]:
        out = make(values)
        for key in instants:
            value = out[key]
            if isinstance(value, datetime):
                out[key] = value.astimezone(UTC)
        return out

    return row


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
