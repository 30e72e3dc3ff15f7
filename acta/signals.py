"""The outside of durable execution: send a signal to a waiting job, resume a paused one, read
a job's progress slot. Sync and async twins run the same verbs; arguments are checked before
any statement runs (a payload that does not encode is refused at the call, nothing written).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from acta.errors import JobNotFoundError
from acta.ids import JobRef
from acta.ledger import durable, read
from acta.ledger.control import check_actor
from acta.ledger.doubt import once
from acta.ledger.signal import resume, send_signal
from acta.model.codes import JobStatus
from acta.names import validate_key
from acta.outcome import SignalOutcome
from acta.overrides import Overrides
from acta.provider.verb import Verb
from acta.shape import encode_payload


@dataclass(frozen=True, slots=True)
class Progress:
    """A job's progress slot as its handler last wrote it."""

    done: float
    total: float | None
    message: str | None
    updated_at: datetime

    @property
    def fraction(self) -> float | None:
        """done / total, when a positive total is known."""
        return self.done / self.total if self.total else None

    def __str__(self) -> str:
        done = _number(self.done)
        text = done if self.total is None else f"{done} of {_number(self.total)}"
        return f"{text} ({self.message})" if self.message else text


def _number(value: float) -> str:
    """43000.0 as "43,000", 0.5 as "0.5": counts read as counts."""
    return f"{int(value):,}" if float(value).is_integer() else f"{value:,}"


class Signals(Overrides):
    """Signals, resumes and progress for one namespace of the ledger ``ledger()`` returns."""

    def _signal_verb(
        self, ref: JobRef | str, name: str, payload: Any, actor: str | None = None
    ) -> Callable[[], Verb[SignalOutcome]]:
        key = str(JobRef.coerce(ref))
        validate_key(name, field="name", max_length=200)
        code, body = encode_payload(payload, Any, "payload", self._registry.payload_cap)
        who = None if actor is None else check_actor(actor)
        ns, now = self.namespace, self._read_ledger().now()
        # One memory per call: a retry after a lost COMMIT reply answers as the first attempt.
        return once(send_signal, key, ns, name, code, body, now, who)

    def signal(
        self, ref: JobRef | str, name: str, payload: Any = None, *, actor: str | None = None
    ) -> SignalOutcome:
        """Send signal ``name`` (with ``payload``) to a job. A job suspended on that signal is
        released; otherwise the signal is kept for its next wait. An unknown or finished job
        is an outcome (NO_SUCH_JOB, JOB_FINISHED), not an error. ``actor`` (an operator's
        name) is recorded on the ``signalled`` event."""
        outcome = self._run(self._signal_verb(ref, name, payload, actor))
        self._after_signal(outcome)
        return outcome

    async def signal_async(
        self, ref: JobRef | str, name: str, payload: Any = None, *, actor: str | None = None
    ) -> SignalOutcome:
        outcome = await self._run_async(self._signal_verb(ref, name, payload, actor))
        self._after_signal(outcome)
        return outcome

    def _after_signal(self, outcome: SignalOutcome) -> None:
        """A released job is ready now: wake this process's idle workers."""

    def resume(
        self,
        ref: JobRef | str,
        reason: str = "resumed by an operator",
        *,
        actor: str | None = None,
    ) -> JobStatus:
        """Take a paused job back to ready; ConflictError if it is not paused. ``actor`` is
        recorded on the ``resumed`` event."""
        key, ns, now = str(JobRef.coerce(ref)), self.namespace, self._read_ledger().now()
        who = None if actor is None else check_actor(actor)
        return self._run(once(resume, key, ns, reason, now, who))

    async def resume_async(
        self,
        ref: JobRef | str,
        reason: str = "resumed by an operator",
        *,
        actor: str | None = None,
    ) -> JobStatus:
        key, ns, now = str(JobRef.coerce(ref)), self.namespace, self._read_ledger().now()
        who = None if actor is None else check_actor(actor)
        return await self._run_async(once(resume, key, ns, reason, now, who))

    def progress(self, ref: JobRef | str) -> Progress | None:
        """The job's progress slot; None if its handler never wrote one."""
        return self._run(self._progress_verb(ref))

    async def progress_async(self, ref: JobRef | str) -> Progress | None:
        return await self._run_async(self._progress_verb(ref))

    def _progress_verb(self, ref: JobRef | str) -> Callable[[], Verb[Progress | None]]:
        key, ns = str(JobRef.coerce(ref)), self.namespace

        def make() -> Verb[Progress | None]:
            info = yield from read.job(key, ns)
            if info is None:
                raise JobNotFoundError(f"no job {key} in namespace {ns!r}")
            row = yield from durable.progress_of(info.job_id)
            if row is None:
                return None
            return Progress(row["done"], row["total"], row["message"], row["updated_at"])

        return make
