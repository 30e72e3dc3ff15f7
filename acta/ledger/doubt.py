"""What one call of a verb remembers across the provider's whole-verb retries, so that a retry
after a lost COMMIT reply recognises what its first attempt committed.

A provider runs a verb again from the top when its connection is lost (reliability rule 7). If
the loss hit the COMMIT's reply, the first attempt's writes are already in the ledger. Writes
keyed by a natural identity (an upsert, ON CONFLICT DO NOTHING, a guard on the state they
write) are harmless to repeat. The others are not: an event or an alert row would be written
twice, and an operator verb whose own change already landed would find the row moved and
report a refusal. For those the caller makes one ``Attempts`` per call and builds every
attempt's verb with it.

Before it ends (its COMMIT is all that follows), an attempt notes a row only it can have
written: an id the database handed out, and the read that finds that row (``remember``). The
next attempt first runs that read (``recall``). Found: the first attempt committed, and its
answer is the call's answer, with nothing written again. Not found: it rolled back, and the
verb runs as if for the first time. Ids handed out to a transaction that rolled back are
never the answer to a read that also checks what the row says (PostgreSQL never hands an id
out twice; SQLite runs one writer and never retries a committed verb).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from acta.provider.verb import Op, Verb, fetch_one

T = TypeVar("T")


class Attempts:
    """The memory of one call across its attempts (see the module docstring)."""

    __slots__ = ("_answer", "_probe")

    def __init__(self) -> None:
        self._probe: Op | None = None
        self._answer: Any = None

    def remember(self, probe: Op, answer: Any) -> None:
        """This attempt wrote what ``probe`` finds and will answer ``answer`` if it commits."""
        self._probe, self._answer = probe, answer

    def recall(self) -> Verb[tuple[bool, Any]]:
        """(True, the earlier answer) when an earlier attempt of this call committed; else
        (False, None), and the earlier attempt is forgotten."""
        probe, self._probe = self._probe, None
        if probe is None:
            return False, None
        found = yield probe
        if found is None:
            self._answer = None
            return False, None
        self._probe = probe  # a later retry of this attempt must find it again
        return True, self._answer


def once(build: Callable[[Attempts], Verb[T]]) -> Callable[[], Verb[T]]:
    """The verb factory of one call: every attempt's verb is built with the same memory."""
    attempts = Attempts()
    return lambda: build(attempts)


def recorded(attempts: Attempts | None, verb: Verb[tuple[T, Op | None]]) -> Verb[T]:
    """Run ``verb``, which answers (its answer, the probe of what it wrote or None when it
    wrote nothing), once per call: a retry whose earlier attempt committed answers as that
    attempt did and runs nothing else. No ``attempts``: no memory (each run stands alone)."""
    if attempts is not None:
        done, earlier = yield from attempts.recall()
        if done:
            return earlier  # type: ignore[no-any-return]
    answer, probe = yield from verb
    if attempts is not None and probe is not None:
        attempts.remember(probe, answer)
    return answer


def event_probe(event_id: int, code: int) -> Op:
    """The read that finds event ``event_id`` of ``code`` (a row one attempt wrote)."""
    return fetch_one("event_written", {"id": event_id, "code": code})


def job_event_probe(job_id: int, code: int) -> Verb[Op]:
    """For a verb whose event another module inserted: the read that finds the newest event of
    ``code`` on job ``job_id``, which this transaction just wrote (it holds the job's row,
    so no other transaction writes that event meanwhile)."""
    row = yield fetch_one("last_job_event", {"job_id": job_id, "code": code})
    return event_probe(int(row["id"]), code)
