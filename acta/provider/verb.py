"""Verbs without I/O: the shape every ledger operation takes.

A verb is a generator that yields ``Op`` values (a named statement, its parameters and what to
fetch) and receives each result back; its return value is the verb's answer. Verbs never touch
a connection, so one verb body serves every provider and both the sync and async executors
(psycopg's design, not a hand-copied async twin). Providers run a whole verb inside one
transaction and retry it whole on transient failures, which is why verbs must not keep side
effects outside the generator.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias, TypeVar

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


Verb: TypeAlias = Generator[Op, Any, T]


def fetch_all(statement: str, params: Mapping[str, Any], *, alone: bool = False) -> Op:
    """Run ``statement`` and receive every row as a dict (``alone``: see ``Op.alone``)."""
    return Op(statement, params, "all", alone)


def fetch_one(statement: str, params: Mapping[str, Any]) -> Op:
    """Run ``statement`` and receive the first row, or None."""
    return Op(statement, params, "one")


def execute(statement: str, params: Mapping[str, Any]) -> Op:
    """Run ``statement`` and receive the number of rows it changed."""
    return Op(statement, params, "rowcount")


def execute_many(statement: str, rows: Sequence[Mapping[str, Any]]) -> Op:
    """Run ``statement`` once per parameter set; receives nothing useful."""
    return Op(statement, rows, "many")


def drive(verb: Verb[T], run_op: Any) -> T:
    """Run a verb to completion with a synchronous ``run_op(op) -> result``."""
    try:
        op = next(verb)
        while True:
            op = verb.send(run_op(op))
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]


async def drive_async(verb: Verb[T], run_op: Any) -> T:
    """Run a verb to completion with an async ``await run_op(op) -> result``."""
    try:
        op = next(verb)
        while True:
            op = verb.send(await run_op(op))
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
