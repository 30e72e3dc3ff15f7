"""Rate meters: an idle meter admits one second's worth at once, then one start per interval;
an early arrival books its turn and comes back for it without spending an attempt; starts in
any window of t seconds never exceed burst + rate x t, however late the turns come back
(issue 9, items 4, 5 and 7). Start instants are read from each job's execution-started event
on the test clock, so the envelope is checked with exact arithmetic.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from acta import Acta, EventCode, JobRef, JobStatus
from acta_testing import Host

if TYPE_CHECKING:
    from conformance.conftest import Ledger

SECOND = timedelta(seconds=1)


def starts(host: Host, refs: Iterable[JobRef]) -> list[datetime]:
    """Every execution-started instant of ``refs``, sorted."""
    return sorted(
        e.at for ref in refs for e in host.events(ref) if e.code is EventCode.EXECUTION_STARTED
    )


def assert_envelope(times: list[datetime], burst: int, per_second: int) -> None:
    """Every window [t_i, t_j] holds at most burst + per_second x (t_j - t_i) starts."""
    for i, t_i in enumerate(times):
        for j in range(i, len(times)):
            window = times[j] - t_i
            count = j - i + 1
            # Multiply out in whole microseconds: no float rounding can hide an extra start.
            assert count * 1_000_000 <= burst * 1_000_000 + per_second * (
                window // timedelta(microseconds=1)
            ), f"{count} starts within {window} from {t_i}"


def drain(host: Host, ledger: Ledger, step: timedelta) -> None:
    """Tick until nothing is claimable, advance ``step``, until every job has finished."""
    for _ in range(10_000):
        if not ledger.value(
            "SELECT count(*) FROM {schema}.jobs_view "
            "WHERE finished_at IS NULL AND job_name NOT LIKE 'sys.%'"
        ):
            return
        while host.tick() != "nothing-claimed":
            pass
        host.advance(step)
    raise AssertionError("the backlog did not drain")


def test_a_meter_at_10_per_second_holds_the_envelope_in_small_steps(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    @acta_app.job("send-sms", rate_limit="10/s")
    def send(n: int) -> None:
        pass

    refs = [send.enqueue(n) for n in range(60)]
    begin = acta_host.clock.now()
    drain(acta_host, ledger, SECOND / 20)
    times = starts(acta_host, refs)
    assert len(times) == 60
    assert_envelope(times, burst=10, per_second=10)
    assert times.count(begin) == 10  # the idle meter's burst, all at once
    # The backlog drains at the rate, not slower: the 60th start is the 50th interval.
    assert times[-1] - begin <= 5 * SECOND + SECOND / 20
    assert all(acta_host.job(r).attempts == 0 for r in refs)


def test_late_turns_after_one_big_jump_are_still_spread(acta_app: Acta, acta_host: Host) -> None:
    @acta_app.job("send-sms", rate_limit="10/s")
    def send(n: int) -> None:
        pass

    refs = [send.enqueue(n) for n in range(60)]
    while acta_host.tick() != "nothing-claimed":
        pass  # 10 start, 50 book their turns over the next five seconds
    acta_host.advance("30s")  # every turn is now long past
    acta_host.run_until_idle()
    times = starts(acta_host, refs)
    assert len(times) == 60
    assert_envelope(times, burst=10, per_second=10)
    late = [t for t in times if t > times[0] + 10 * SECOND]
    assert len(late) == 50 and late.count(late[0]) == 10  # a burst again, then spaced


def test_a_late_backlog_comes_back_in_turn_order_without_re_racing(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    @acta_app.job("send-sms", rate_limit="10/s")
    def send(n: int) -> None:
        pass

    for n in range(60):
        send.enqueue(n)
    while acta_host.tick() != "nothing-claimed":
        pass  # 10 start, 50 are bounced once to their booked turns
    acta_host.advance("30s")  # the fleet was away: every turn is long past
    acta_host.run_until_idle()
    # A late job that finds the burst spent should get a turn of its own in line, as an
    # early arrival does: bounced once before the pause and at most once after it.
    most = ledger.value(
        "SELECT max(n) FROM (SELECT count(*) AS n FROM {schema}.events_view "
        "WHERE event = 'bounced' GROUP BY job_ref) per_job"
    )
    assert most <= 2


def test_an_early_arrival_is_bounced_to_its_booked_turn(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    @acta_app.job("send-sms", rate_limit="10/s")
    def send(n: int) -> None:
        pass

    refs = [send.enqueue(n) for n in range(12)]
    begin = acta_host.clock.now()
    outcomes = [acta_host.tick() for _ in range(12)]
    assert outcomes == ["completed"] * 10 + ["bounced"] * 2
    for n, ref in enumerate(refs[10:], start=1):
        job = acta_host.job(ref)
        turn = begin + n * SECOND / 10  # one interval after the burst, then the next
        assert job.status is JobStatus.READY and job.next_run_at == turn
        assert (job.attempts, job.executions) == (0, 0)
        [bounce] = [e for e in acta_host.events(ref) if e.code is EventCode.BOUNCED]
        detail = json.loads(bounce.detail or "{}")
        assert (detail["gate"], detail["key"], detail["rate"]) == ("rate", "send-sms", "10/s")
        assert datetime.fromisoformat(detail["until"]) == turn
    assert acta_host.tick() == "nothing-claimed"  # not claimable before its turn
    acta_host.advance(SECOND / 10)
    assert acta_host.tick() == "completed"
    assert acta_host.tick() == "nothing-claimed"
    acta_host.advance(SECOND / 10)
    assert acta_host.tick() == "completed"
    assert starts(acta_host, refs[10:]) == [begin + SECOND / 10, begin + SECOND / 5]


def test_definitions_sharing_a_rate_key_share_one_meter(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    @acta_app.job("send-sms", rate_limit="10/s", rate_key="carrier")
    def send_sms(n: int) -> None:
        pass

    @acta_app.job("send-mms", rate_limit="10/s", rate_key="carrier")
    def send_mms(n: int) -> None:
        pass

    refs = [job.enqueue(n) for n in range(20) for job in (send_sms, send_mms)]
    begin = acta_host.clock.now()
    drain(acta_host, ledger, SECOND / 20)
    times = starts(acta_host, refs)
    assert len(times) == 40
    assert times.count(begin) == 10  # one burst between them, not one each
    assert_envelope(times, burst=10, per_second=10)
    assert [m.name for m in acta_app.meters()] == ["carrier"]


def test_a_job_without_gates_is_never_slowed(acta_app: Acta, acta_host: Host) -> None:
    @acta_app.job("send-sms", rate_limit="2/s")
    def send(n: int) -> None:
        pass

    @acta_app.job("log-line")
    def log_line(n: int) -> None:
        pass

    for n in range(4):
        send.enqueue(n)
    free = log_line.enqueue(0)  # behind the metered jobs in claim order
    begin = acta_host.clock.now()
    outcomes = [acta_host.tick() for _ in range(5)]
    assert outcomes == ["completed", "completed", "bounced", "bounced", "completed"]
    assert starts(acta_host, [free]) == [begin]
    assert "bounced" not in acta_host.event_names(free)


def test_an_idle_meter_admits_one_seconds_worth_at_once(acta_app: Acta, acta_host: Host) -> None:
    @acta_app.job("poll-feed", rate_limit="300/m")
    def poll(n: int) -> None:
        pass

    @acta_app.job("rotate-key", rate_limit="30/m")
    def rotate(n: int) -> None:
        pass

    for n in range(7):
        poll.enqueue(n)
    assert [acta_host.tick() for _ in range(7)] == ["completed"] * 5 + ["bounced"] * 2
    acta_host.run_until_idle()
    acta_host.advance("1m")  # idle again: a full burst is back
    for n in range(6):
        poll.enqueue(n)
    assert [acta_host.tick() for _ in range(6)] == ["completed"] * 5 + ["bounced"]
    acta_host.run_until_idle()

    # Half a start a second rounds up to a burst of one, then one start every two seconds.
    rotations = [rotate.enqueue(n) for n in range(3)]
    begin = acta_host.clock.now()
    assert [acta_host.tick() for _ in range(3)] == ["completed", "bounced", "bounced"]
    acta_host.run_until_idle()
    assert starts(acta_host, rotations) == [begin, begin + 2 * SECOND, begin + 4 * SECOND]


def test_a_lane_head_passes_its_rate_gate_while_the_members_wait(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    seen: list[str] = []

    @acta_app.job("notify", rate_limit="1/s")
    def notify(name: str) -> None:
        seen.append(name)

    notify.enqueue("free")
    head = notify.enqueue("head", lane="cust-r")
    member = notify.enqueue("member", lane="cust-r")
    assert acta_host.tick() == "completed"  # the unlaned job takes the one-second burst
    assert acta_host.tick() == "bounced"  # the head waits for its turn, keeping its place
    assert acta_host.job(head).status is JobStatus.READY
    assert acta_host.job(member).status is JobStatus.BLOCKED
    assert acta_host.tick() == "nothing-claimed"
    acta_host.run_until_idle()
    assert seen == ["free", "head", "member"]
    assert starts(acta_host, [member])[0] >= starts(acta_host, [head])[0] + SECOND
