"""The base of a run's durable port: the lease its writes are fenced by, how values are
encoded, and the two ways out of a handler that the handler itself never sees (``Suspend``
parks the job on a durable wait, ``EndRun`` ends the run as a directive says).

``acta.runtime.durable`` builds the port a handler context calls on this (steps, variables,
waits), with ``acta.runtime.children`` for child jobs.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any, TypeVar

from acta.codec import codecs, decode_value
from acta.definition import JobDefinition
from acta.duration import parse_duration
from acta.errors import LeaseLostError
from acta.ledger import durable as verbs
from acta.ledger.fence import RunLease
from acta.model.codes import AuditLevel, Reason, WaitKind
from acta.model.rows import WaitRef
from acta.names import validate_key, validate_text
from acta.outcome import Directive
from acta.provider.verb import Verb
from acta.runtime.environment import RunEnv
from acta.runtime.run import Run, Stop
from acta.shape import encode_payload, from_data

T = TypeVar("T")

NAME_MAX = 200
TEXT_MAX = 4000


class Suspend(BaseException):
    """Raised through the handler to park its job on a durable wait. A BaseException, so a
    handler's ``except Exception`` does not swallow it."""

    def __init__(self, wait: WaitRef, until: datetime | None, what: str) -> None:
        super().__init__(what)
        self.wait = wait
        self.until = until
        self.what = what


class EndRun(BaseException):
    """Raised through the handler to end the run as ``directive`` says (a signal wait that
    timed out cancels the job)."""

    def __init__(self, directive: Directive, reason: Reason) -> None:
        super().__init__(directive.reason)
        self.directive = directive
        self.reason = reason


def check_name(value: str, field: str) -> str:
    return validate_key(value, field=field, max_length=NAME_MAX)


def wait_ms(value: Any, field: str) -> int:
    wait = parse_duration(value, field=field, allow_zero=True)
    return -(-wait // timedelta(milliseconds=1))


def check_text(value: str, field: str, limit: int = TEXT_MAX) -> str:
    return validate_text(value, field=field, max_length=limit)


class PortBase:
    """What every part of a run's durable port shares: its run, its lease, its plumbing."""

    def __init__(
        self, env: RunEnv, run: Run, definition: JobDefinition[Any, Any], execution: int
    ) -> None:
        job = run.job
        self.env, self.run, self.definition = env, run, definition
        self.lease = RunLease(
            job.job_id, job.job_ref, job.namespace_id, job.epoch, env.identity.worker_id, execution
        )
        self.audit = definition.policy.audit

    # -- plumbing -----------------------------------------------------------------------

    def _now(self) -> datetime | None:
        return self.env.ledger.now()

    async def _read(self, make: Callable[[], Verb[T]]) -> T:
        self.run.durable = True  # a job with durable state never waits in a bulk flush window
        return await self.env.ledger.run_async(make, name="durable")

    async def _write(self, make: Callable[[], Verb[T | None]], what: str) -> T:
        if self.env.killed:  # a dead process writes nothing, even under a lease not yet lapsed
            raise LeaseLostError(f"{what} was not written: the worker is gone")
        self.run.durable = True
        done = await self.env.ledger.run_async(make, name="durable")
        if done is None or done is False:
            self.run.stop(Stop.LEASE_LOST)
            raise LeaseLostError(f"{what} was refused: job {self.lease.job_ref} lost its lease")
        return done

    def _encode(self, value: Any, tp: Any, field: str) -> tuple[int, bytes]:
        return encode_payload(value, tp, field, self.env.registry.payload_cap)

    @staticmethod
    def _decode(stored: tuple[int, bytes] | None, tp: Any, field: str) -> Any:
        if stored is None:
            return None
        return from_data(decode_value(codecs.by_code(stored[0]), stored[1], field), tp, field)

    def _audited(self) -> bool:
        return self.audit is AuditLevel.FULL

    async def _arm(
        self, kind: WaitKind, name: str, until: datetime | None, ms: int | None, reopen: bool
    ) -> verbs.WaitState:
        lease, now = self.lease, self._now()

        def make() -> Verb[verbs.WaitState | None]:
            return verbs.arm_wait(
                lease, int(kind), name, until=until, ms=ms, reopen=reopen, now=now
            )

        state: verbs.WaitState = await self._write(make, f"the {kind.label} wait {name!r}")
        return state
