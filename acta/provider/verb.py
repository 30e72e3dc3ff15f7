"""Verbs without I/O: the shape every ledger operation takes.

A verb is a generator that yields ``Op`` values (a named statement, its parameters and what to
fetch) and receives each result back; its return value is the verb's answer. Verbs never touch
a connection, so one verb body serves every provider and both the sync and async executors
(psycopg's design, not a hand-copied async twin). Providers run a whole verb inside one
transaction and retry it whole on transient failures, which is why verbs must not keep side
effects outside the generator.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeAlias, TypeVar

T = TypeVar("T")

Row: TypeAlias = dict[str, Any]
Fetch = Literal["all", "one", "rowcount", "many"]


@dataclass(frozen=True, slots=True)
class Op:
    """One statement to run: its name in the dialect's .sql files and its parameters."""

    statement: str
    params: Mapping[str, Any] | Sequence[Mapping[str, Any]]
    fetch: Fetch
    alone: bool = False
    """The statement is atomic on its own: as a verb's first statement, a server provider may
    run it as its own transaction (one round trip instead of BEGIN, statement, COMMIT)."""
    in_doubt: Op | None = None
    """For an ``alone`` statement that is not safe to run twice: a read that finds what it
    wrote, run first when an earlier attempt lost the connection while it was in flight (it
    may have committed). Rows found are taken as its result, and it is not run again."""


Verb: TypeAlias = Generator[Op, Any, T]


def fetch_all(
    statement: str, params: Mapping[str, Any], *, alone: bool = False, in_doubt: Op | None = None
) -> Op:
    """Run ``statement`` and receive every row as a dict (``alone``, ``in_doubt``: see ``Op``)."""
    return Op(statement, params, "all", alone, in_doubt)


def fetch_one(statement: str, params: Mapping[str, Any]) -> Op:
    """Run ``statement`` and receive the first row, or None."""
    return Op(statement, params, "one")


def execute(statement: str, params: Mapping[str, Any]) -> Op:
    """Run ``statement`` and receive the number of rows it changed."""
    return Op(statement, params, "rowcount")


def execute_many(statement: str, rows: Sequence[Mapping[str, Any]]) -> Op:
    """Run ``statement`` once per parameter set; receives nothing useful."""
    return Op(statement, rows, "many")


def drive(verb: Generator[Any, Any, T], run_op: Any) -> T:
    """Run a verb to completion with a synchronous ``run_op(op) -> result``."""
    try:
        op = next(verb)
        while True:
            op = verb.send(run_op(op))
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]


async def drive_async(verb: Generator[Any, Any, T], run_op: Any) -> T:
    """Run a verb to completion with an async ``await run_op(op) -> result``."""
    try:
        op = next(verb)
        while True:
            op = verb.send(await run_op(op))
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]


class Diverged(Exception):
    """Replaying a verb's statements after a failed attempt did not give the answers the verb
    already acted on: the ledger changed in between, so the verb cannot go on."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__(str(cause))
        self.cause = cause


class VerbRun(Generic[T]):
    """One verb driven across transaction attempts by a provider that retries.

    Before anything has committed, a failed attempt starts the verb over (``restart``). Once
    its first statement has committed on its own (``Op.alone``), starting over would repeat
    that statement; instead the next attempt replays, in a new transaction, the statements that
    ran after the commit (the failed transaction rolled them back), checks that each answers
    exactly as before, and goes on from the statement that failed. A different answer raises
    ``Diverged``.

    A connection lost while an ``alone`` statement was in flight leaves its commit in doubt.
    The verb starts over; if the statement has an ``Op.in_doubt`` probe, the next attempt runs
    the probe first and takes rows it finds as the statement's committed result.
    """

    def __init__(self, make: Callable[[], Verb[T]]) -> None:
        self._make = make
        self._verb = make()
        self._first()
        self.committed = False
        self._replay: list[tuple[Op, Any]] = []
        self.error: BaseException | None = None
        # The step now in flight, and the probe that would settle its outcome if it is lost.
        self._flight: tuple[Op, Op | None] | None = None
        self._probe: Op | None = None

    def failed(self, error: BaseException, in_doubt: bool) -> None:
        """Prepare the next attempt after ``error``. ``in_doubt``: the connection was lost, so
        a statement in flight may have committed without its reply reaching us."""
        self.error = error
        flight, self._flight = self._flight, None
        if flight is not None and flight[0] is self._probe:
            pass  # the probe itself failed: the statement's outcome is still unknown
        elif in_doubt and flight is not None and flight[1] is not None:
            self._probe = flight[1]
        else:
            self._probe = None
        if not self.committed:
            self.restart()

    def restart(self) -> None:
        """Start the verb over (only while nothing it ran has committed)."""
        assert not self.committed, "a verb with a committed statement is resumed, not restarted"
        self._verb.close()
        self._verb = self._make()
        self._first()

    def _first(self) -> None:
        self._any_op = False
        self._value: Any = None
        try:
            self._op: Op | None = next(self._verb)  # a verb that checks its input fails here
        except StopIteration as done:  # a verb with nothing to run
            self._op, self._value = None, done.value

    def steps(self) -> Generator[tuple[Op, bool], Any, T]:
        """Yields ``(op, alone)`` to run (``alone``: commit it by itself), receives its result,
        returns the verb's answer. Use a new ``steps()`` for each attempt."""
        for op, expected in self._replay:
            if (yield op, False) != expected:
                raise Diverged(self.error or RuntimeError("replay diverged"))
        while self._op is not None:
            op = self._op
            alone = op.alone and not self._any_op
            self._any_op = True
            found: Any = None
            if alone and self._probe is not None:
                self._flight = (self._probe, self._probe)
                found = yield self._probe, True  # a read: autocommit is harmless
                self._probe = None
            if found:
                result = found  # the statement had committed: do not run it twice
            else:
                self._flight = (op, op.in_doubt if alone else None)
                result = yield op, alone
            self._flight = None
            if alone:
                self.committed = True
            elif self.committed:
                self._replay.append((op, result))
            try:
                self._op = self._verb.send(result)
            except StopIteration as done:
                self._op, self._value = None, done.value
        return self._value  # type: ignore[no-any-return]
