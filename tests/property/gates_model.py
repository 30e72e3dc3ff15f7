"""What the gates state machine expects of the ledger, checked from the ledger's own rows.

The machine (test_gates_machine.py) drives the real runtime; this module knows which gates each
job it enqueued carries and reads the ledger through an operator connection of its own (never
through acta's code), after every step:

- the event history, read incrementally in id order (one writer at a time in the test host, so
  id order is commit order), replayed against the rules: a lane member starts, and is promoted,
  only after every earlier member of its lane ended; a job entering a concurrency gate finds
  fewer holders than its limit; starts of the rate-limited definition stay inside the envelope
  burst + rate x t over every window of t seconds;
- the rows as they are now: only the lowest unfinished member of a lane is out of ``blocked``,
  ``lanes_view`` names it as head with the right depth, ``gates_view`` lists exactly the
  executing jobs as holders, and what the events say is running is what the rows say.

The expectations are written here from the documented rules, not imported from acta.policy, so
a wrong rule in the core cannot make its own check pass.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from acta.model.codes import EventCode
from acta.provider.testing import LedgerLocation, Operator


@dataclass(frozen=True)
class Definition:
    """One job definition of the machine and the gates it declares."""

    name: str
    lane: str | None = None
    limit: int | None = None
    rate: tuple[int, int] | None = None
    """(starts, period in ms)."""

    def policy(self) -> dict[str, Any]:
        found: dict[str, Any] = {}
        if self.lane is not None:
            found["lane"] = self.lane
        if self.limit is not None:
            found["concurrency_limit"] = self.limit
        if self.rate is not None:
            found["rate_limit"] = f"{self.rate[0]}/s"
            assert self.rate[1] == 1000
        return found


DEFINITIONS = {
    d.name: d
    for d in (
        Definition("plain"),
        Definition("limited", limit=2),
        # 3/s: a burst of three, then starts 334 ms apart (a second does not divide by three,
        # so the core's rounding of the spacing is under test as well).
        Definition("metered", rate=(3, 1000)),
        Definition("laned", lane="by-def"),
    )
}
TERMINAL = ("succeeded", "failed", "cancelled")
ENDS_RUN = (EventCode.EXECUTION_FINISHED, EventCode.LEASE_LOST)
ENDS_JOB = (EventCode.SUCCEEDED, EventCode.FAILED, EventCode.CANCELLED)


@dataclass(frozen=True)
class JobModel:
    """A job the machine enqueued: its definition, lane and concurrency gate."""

    ref: str
    definition: Definition
    lane: str | None
    key: str | None

    @property
    def gate(self) -> tuple[str, str, int] | None:
        """(kind, name, limit) of the concurrency gate the job passes, if any: its key with
        the definition's limit or one slot, else the definition's own limit."""
        if self.key is not None:
            return ("key", self.key, self.definition.limit or 1)
        if self.definition.limit is not None:
            return ("job", self.definition.name, self.definition.limit)
        return None


def instant(value: Any) -> datetime:
    """An event's ``at`` as an aware datetime (SQLite stores text, PostgreSQL timestamptz)."""
    found = datetime.fromisoformat(value) if isinstance(value, str) else value
    assert isinstance(found, datetime), value
    return found if found.tzinfo is not None else found.replace(tzinfo=UTC)


@dataclass
class LedgerModel:
    """The machine's expectations, and the history replayed from the ledger so far."""

    operator: Operator
    location: LedgerLocation
    jobs: dict[str, JobModel] = field(default_factory=dict)
    lanes: dict[str, list[str]] = field(default_factory=dict)
    """Each lane's members in enqueue order, which must be the ledger's lane order."""
    last_event: int = 0
    running: set[str] = field(default_factory=set)
    ended: set[str] = field(default_factory=set)
    promoted: set[str] = field(default_factory=set)
    starts: dict[str, list[datetime]] = field(default_factory=dict)
    """Start instants per rate-limited definition, in order."""

    def rows(self, sql: str, params: dict[str, Any] | None = None) -> list[tuple[Any, ...]]:
        return self.operator.rows(self.location.prepare(sql), params or {})

    def add(self, job: JobModel) -> None:
        self.jobs[job.ref] = job
        if job.lane is not None:
            self.lanes.setdefault(job.lane, []).append(job.ref)

    def _before(self, job: JobModel) -> list[str]:
        """The members of ``job``'s lane enqueued before it."""
        assert job.lane is not None
        line = self.lanes[job.lane]
        return line[: line.index(job.ref)]

    # -- the history ----------------------------------------------------------------------

    def replay(self) -> None:
        """Apply the events written since the last call, checking each against the rules."""
        found = self.rows(
            "SELECT id, at, job_ref, code FROM {schema}.events "
            "WHERE id > :last AND job_ref IS NOT NULL ORDER BY id",
            {"last": self.last_event},
        )
        for event_id, at, ref, code in found:
            self.last_event = event_id
            job = self.jobs.get(ref)
            if job is not None:  # acta's own jobs (recovery) pass no gate
                self._apply(event_id, instant(at), job, EventCode(code))

    def _apply(self, event_id: int, at: datetime, job: JobModel, code: EventCode) -> None:
        where = f"event {event_id} ({code.label}) of {job.ref} ({job.definition.name}"
        where += f", lane {job.lane}, key {job.key})"
        if code is EventCode.EXECUTION_STARTED:
            assert job.ref not in self.ended, f"{where}: started after it ended"
            assert job.ref not in self.running, f"{where}: started twice without ending"
            if job.lane is not None:
                waiting = [r for r in self._before(job) if r not in self.ended]
                assert not waiting, f"{where}: started before earlier members {waiting} ended"
                assert job.ref in self.promoted, f"{where}: started without being promoted"
            self._enter_gate(where, job)
            if job.definition.rate is not None:
                self._start_on_meter(where, at, job.definition)
            self.running.add(job.ref)
        elif code in ENDS_RUN:
            self.running.discard(job.ref)
        elif code in ENDS_JOB:
            assert job.ref not in self.ended, f"{where}: a second terminal event"
            assert job.ref not in self.running, f"{where}: ended while its run was open"
            self.ended.add(job.ref)
        elif code is EventCode.PROMOTED:
            assert job.lane is not None, f"{where}: promoted without a lane"
            assert job.ref not in self.promoted, f"{where}: promoted twice"
            assert job.ref not in self.ended, f"{where}: promoted after it ended"
            waiting = [r for r in self._before(job) if r not in self.ended]
            assert not waiting, f"{where}: promoted before earlier members {waiting} ended"
            self.promoted.add(job.ref)

    def _enter_gate(self, where: str, job: JobModel) -> None:
        gate = job.gate
        if gate is None:
            return
        # Jobs of another definition may share a key with another declared limit: each one
        # is admitted against the limit it declares itself.
        holders = sorted(r for r in self.running if _same(self.jobs[r].gate, gate))
        assert len(holders) < gate[2], (
            f"{where}: admitted to {gate[0]} gate {gate[1]!r} (limit {gate[2]}) "
            f"while {holders} held it"
        )

    def _start_on_meter(self, where: str, at: datetime, definition: Definition) -> None:
        assert definition.rate is not None
        rate, period_ms = definition.rate
        burst = max(1, rate * 1000 // period_ms)  # one second's worth, at least one
        starts = self.starts.setdefault(definition.name, [])
        starts.append(at)
        # Every window worth checking ends at a start: the one just made.
        for index, earlier in enumerate(starts):
            count = len(starts) - index
            window_ms = (at - earlier).total_seconds() * 1000
            assert (count - burst) * period_ms <= rate * window_ms, (
                f"{where}: {count} starts of {definition.name} within {window_ms:.0f} ms "
                f"(from {earlier.isoformat()} to {at.isoformat()}), more than the envelope "
                f"{burst} + {rate} per {period_ms} ms allows"
            )

    # -- the rows as they are now ---------------------------------------------------------

    def check_rows(self) -> dict[str, str]:
        """Check the current rows against the rules and the replayed history; returns each
        job's status."""
        found = self.rows(
            "SELECT job_ref, job_name, status, lane, lane_seq, concurrency_key "
            "FROM {schema}.jobs_view WHERE job_name NOT LIKE 'sys.%'"
        )
        status: dict[str, str] = {}
        seq: dict[str, int] = {}
        for ref, name, state, lane, lane_seq, key in found:
            job = self.jobs[ref]
            assert (name, lane, key) == (job.definition.name, job.lane, job.key), (ref, name)
            status[ref] = state
            if lane is not None:
                seq[ref] = lane_seq
        assert set(status) == set(self.jobs), "the ledger and the machine disagree on the jobs"
        assert "dispatched" not in status.values(), f"a claim was left dispatched: {status}"
        executing = {ref for ref, state in status.items() if state == "executing"}
        assert executing == self.running, (
            f"executing rows {sorted(executing)} but the events say {sorted(self.running)}"
        )
        ended = {ref for ref, state in status.items() if state in TERMINAL}
        assert ended == self.ended, "terminal rows and terminal events disagree"
        self._check_lanes(status, seq)
        self._check_gates(executing)
        return status

    def _check_lanes(self, status: dict[str, str], seq: dict[str, int]) -> None:
        heads = {
            lane: (head, depth)
            for lane, head, depth in self.rows(
                "SELECT lane, head_job_ref, depth FROM {schema}.lanes_view"
            )
        }
        for lane, line in self.lanes.items():
            positions = [seq[ref] for ref in line]
            assert positions == sorted(set(positions)), (
                f"lane {lane}: positions {positions} do not follow enqueue order"
            )
            unfinished = [ref for ref in line if status[ref] not in TERMINAL]
            states = [status[ref] for ref in unfinished]
            assert all(s == "blocked" for s in states[1:]), (
                f"lane {lane}: members behind the head are not all blocked: "
                f"{list(zip(unfinished, states, strict=True))}"
            )
            assert not states or states[0] != "blocked", f"lane {lane}: its head is blocked"
            head = unfinished[0] if unfinished else None
            assert heads.get(lane) == (head, len(unfinished)), (
                f"lane {lane}: lanes_view says {heads.get(lane)}, expected ({head}, "
                f"{len(unfinished)})"
            )

    def _check_gates(self, executing: set[str]) -> None:
        expected: dict[tuple[str, str], set[str]] = {}
        for ref in executing:
            gate = self.jobs[ref].gate
            if gate is not None:
                expected.setdefault(gate[:2], set()).add(ref)
        for refs in expected.values():
            limit = max(g[2] for g in _gates(self.jobs[r] for r in refs))
            assert len(refs) <= limit, f"{sorted(refs)} execute at once past limit {limit}"
        held: dict[tuple[str, str], set[str]] = {}
        for kind, name, holders in self.rows(
            "SELECT kind, name, holders FROM {schema}.gates_view WHERE held > 0"
        ):
            held[(kind, name)] = set(json.loads(holders))
        assert held == expected, f"gates_view holders {held}, executing gated jobs {expected}"

    def check_drained(self, status: dict[str, str]) -> None:
        """After the final drain: every job ended, every lane empty, no slot held."""
        left = {ref: state for ref, state in status.items() if state not in TERMINAL}
        assert not left, f"jobs left unfinished after the drain: {left}"
        lanes = self.rows(
            "SELECT lane, head_job_ref, depth FROM {schema}.lanes_view "
            "WHERE depth > 0 OR head_job_ref IS NOT NULL"
        )
        assert not lanes, f"lanes not empty after the drain: {lanes}"
        [[holds]] = self.rows("SELECT count(*) FROM {schema}.gate_holds")
        assert holds == 0, f"{holds} gate_holds rows left after the drain"
        assert not self.running


def _same(a: tuple[str, str, int] | None, b: tuple[str, str, int]) -> bool:
    return a is not None and a[:2] == b[:2]


def _gates(jobs: Iterable[JobModel]) -> list[tuple[str, str, int]]:
    return [g for g in (j.gate for j in jobs) if g is not None]
