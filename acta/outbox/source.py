"""An outbox source: the application database the relay reads staged rows from.

``OutboxSource`` is configuration only. Giving one to ``Acta(outbox=...)`` opens nothing: the
relay (``sys.outbox``) opens it in worker processes, once per source transaction, and closes
it again, so no connection outlives the transaction that needed it. A source is reached either
through ``connect`` (a callable returning a fresh sqlite3 or psycopg connection, for whatever
pooling or credentials the application already has) or through ``url`` (a SQLite path or
``sqlite:///path``, or a ``postgresql://`` DSN).

``SourceConnection`` runs the named statements of the provider's ``outbox/relay.sql``
(acta.provider.outbox) on one such connection, binding values the way the provider's outbox
dialect stores them (SQLite: instants as UTC text with milliseconds, as the ledger does) and
reading instants back as aware datetimes. The table is the
application's, written by programs acta does not control, so reading never fails on a value:
an instant that cannot be read (SQLite text that is no timestamp, PostgreSQL's ``infinity``)
comes back as it was stored, for the relay to quarantine that one row (``acta.outbox.relay``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from acta.duration import parse_duration
from acta.errors import ConfigurationError, ValidationError
from acta.names import validate_key
from acta.outbox.provisioning import QUARANTINE, TABLE, table_name
from acta.provider import outbox as dialects

BATCH_MAX = 1000
INSTANT_COLUMNS = frozenset(
    {"run_at", "deadline_at", "staged_at", "claimed_until", "quarantined_at", "decided_at"}
)


@dataclass(frozen=True, slots=True)
class OutboxSource:
    """Where the relay finds an outbox, and how it paces itself there.

    ``name`` goes into the deduplication key of every job delivered from this source
    (``outbox:<name>:<row id>``): keep it stable, and change it if the outbox table is ever
    dropped and created again (its ids would start over).
    """

    connect: Callable[[], Any] | None = None
    """Returns a new sqlite3 or psycopg (sync) connection; the relay closes it after use."""
    url: str | None = None
    """A SQLite file (``path`` or ``sqlite:///path``) or a ``postgresql://`` DSN."""
    schema: str | None = None
    """The PostgreSQL schema holding ``acta_outbox`` (``public`` by default)."""
    name: str = "default"
    batch: int = 100
    """Rows claimed per source transaction (1 to 1000)."""
    poll: str | float | timedelta = "1s"
    """How long after a relay run the next one comes due."""
    hold: str | float | timedelta = "30s"
    """How long a claim holds its rows; a relay that dies leaves them claimable after it."""
    poll_every: timedelta = field(init=False)
    hold_for: timedelta = field(init=False)

    def __post_init__(self) -> None:
        if (self.connect is None) == (self.url is None):
            raise ConfigurationError(
                "an OutboxSource needs exactly one of connect= (a callable returning a new "
                "driver connection) or url= (the database's URL or path, as Acta takes it)"
            )
        if self.connect is not None and not callable(self.connect):
            raise ValidationError("connect", f"got {type(self.connect).__name__}", "a callable")
        validate_key(self.name, field="name", max_length=100)
        if isinstance(self.batch, bool) or not isinstance(self.batch, int):
            raise ValidationError("batch", f"got {self.batch!r}", f"an int from 1 to {BATCH_MAX}")
        if not 1 <= self.batch <= BATCH_MAX:
            raise ValidationError("batch", f"got {self.batch}", f"an int from 1 to {BATCH_MAX}")
        poll = parse_duration(self.poll, field="poll")
        hold = parse_duration(self.hold, field="hold")
        if hold < timedelta(seconds=1):
            raise ValidationError("hold", f"got {hold}", "at least one second")
        object.__setattr__(self, "poll_every", poll)
        object.__setattr__(self, "hold_for", hold)
        if self.url is not None and self.schema:
            table_name(dialects.for_url(self.url).name, self.schema)  # refused where no schemas

    def open(self) -> SourceConnection:
        """A new connection to the source (in autocommit: transactions are explicit)."""
        if self.connect is not None:
            conn = self.connect()
            found, is_async = dialects.for_connection(conn)
            if is_async:
                raise ConfigurationError("OutboxSource.connect must return a sync connection")
        else:
            found = dialects.for_url(self.url or "")
            conn = found.connect(self.url or "")
        found.adopt(conn)
        return SourceConnection(conn, found.name, self.schema if found.schemas else None)


class SourceConnection:
    """One open connection to a source and the relay's statements in its dialect."""

    def __init__(self, conn: Any, dialect: str, schema: str | None) -> None:
        self.conn = conn
        self.dialect = dialect
        self._outbox = dialects.dialect(dialect)
        table = table_name(dialect, schema)
        self.table = table
        self.quarantine = table.removesuffix(TABLE) + QUARANTINE
        self.statements = dialects.relay_statements(dialect)

    def _sql(self, name: str) -> str:
        try:
            sql = self.statements[name]
        except KeyError:
            raise AssertionError(f"no outbox statement named {name!r}") from None
        return sql.replace("{table}", self.table).replace("{quarantine}", self.quarantine)

    def _bind(self, params: Mapping[str, Any]) -> dict[str, Any]:
        bind = self._outbox.bind
        return {key: bind(value) for key, value in params.items()}

    def rows(self, name: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        cursor = self._outbox.execute(self.conn, self._sql(name), self._bind(params or {}))
        columns = [c[0] for c in cursor.description or ()]
        return [self._read(dict(zip(columns, row, strict=True))) for row in cursor.fetchall()]

    def execute(self, name: str, params: Mapping[str, Any] | None = None) -> int:
        cursor = self._outbox.execute(self.conn, self._sql(name), self._bind(params or {}))
        return int(cursor.rowcount)

    def _read(self, row: dict[str, Any]) -> dict[str, Any]:
        for key in INSTANT_COLUMNS & row.keys():
            row[key] = read_instant(row[key])
        if "input" in row and isinstance(row["input"], memoryview):
            row["input"] = bytes(row["input"])
        return row

    @contextmanager
    def transaction(self) -> Iterator[SourceConnection]:
        """One source transaction, opened as the provider says (SQLite takes the write lock
        at once; PostgreSQL serialises the relay's claims with its ``lock`` statement)."""
        self._outbox.execute(self.conn, self._outbox.begin)
        try:
            yield self
        except BaseException:
            self._outbox.execute(self.conn, "ROLLBACK")
            raise
        self._outbox.execute(self.conn, "COMMIT")

    def close(self) -> None:
        self.conn.close()


def read_instant(value: object) -> object:
    """A stored instant as an aware UTC datetime; anything that is not one is returned as it
    is (never an error: one bad row must not stop the relay from reading the others)."""
    if not isinstance(value, str):
        return value
    try:
        found = datetime.fromisoformat(value)
        # acta writes naive UTC text; an offset someone else wrote is honoured, not dropped.
        return found.replace(tzinfo=UTC) if found.tzinfo is None else found.astimezone(UTC)
    except (ValueError, OverflowError):  # no timestamp, or one before year 1 in UTC
        return value


def shown(value: object) -> str:
    """A stored value as text: a str as it is, anything else another program stored in a text
    column (SQLite keeps a blob or a number there) as its repr."""
    return value if isinstance(value, str) else repr(value)
