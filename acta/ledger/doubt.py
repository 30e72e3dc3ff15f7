"""One call of a verb, recognised across the provider's whole-verb retries: a retry after a
lost COMMIT reply finds what its first attempt committed and answers as that attempt did.

A provider runs a verb again from the top when its connection is lost (reliability rule 7). If
the loss hit the COMMIT's reply, the first attempt's writes are already in the ledger. Writes
keyed by a natural identity (an upsert, ON CONFLICT DO NOTHING, a guard on the state they
write) are harmless to repeat. The others are not: an event or an alert row would be written
twice, and an operator verb whose own change already landed would find the row moved and
report a refusal.

Such a verb answers a pair: its answer, and the probe of what it wrote (a read that finds a
row only this attempt can have written: an id the database handed out), or None when it wrote
nothing. The caller builds the call's verb factory with ``once(verb, *args)``: every attempt
shares one memory. An attempt that ends (its COMMIT is all that follows) is remembered with
its probe; the next attempt runs that probe first. Found: the earlier attempt committed, and
its answer is the call's answer, with nothing run again. Not found: it rolled back, and the
verb runs as if for the first time. A probe also checks what the row says, so an id handed
out to a transaction that rolled back never passes for it (PostgreSQL never hands an id out
twice; SQLite runs one writer and never retries a committed verb).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

from acta.provider.verb import Op, Verb, fetch_one

T = TypeVar("T")
P = ParamSpec("P")


def once(
    verb: Callable[P, Verb[tuple[T, Op | None]]], *args: P.args, **kwargs: P.kwargs
) -> Callable[[], Verb[T]]:
    """The verb factory of one call of ``verb(*args, **kwargs)`` (see the module docstring)."""
    memory: list[tuple[Op, Any]] = []  # the ended attempt's probe and answer, if any

    def attempt() -> Verb[T]:
        if memory:
            earlier_probe, earlier = memory[-1]
            if (yield earlier_probe) is not None:
                return earlier  # type: ignore[no-any-return]
            memory.clear()  # it rolled back
        answer, probe = yield from verb(*args, **kwargs)
        if probe is not None:
            memory.append((probe, answer))
        return answer

    return attempt


def event_probe(event_id: int, code: int) -> Op:
    """The read that finds event ``event_id`` of ``code`` (a row one attempt wrote)."""
    return fetch_one("event_written", {"id": event_id, "code": code})


def job_event_probe(job_id: int, code: int) -> Verb[Op]:
    """For a verb whose event another module inserted: the read that finds the newest event of
    ``code`` on job ``job_id``, which this transaction just wrote (it holds the job's row,
    so no other transaction writes that event meanwhile)."""
    row = yield fetch_one("last_job_event", {"job_id": job_id, "code": code})
    return event_probe(int(row["id"]), code)
