"""VerbRun: how a verb is carried across failed transaction attempts (pure driver logic: the
statements are answered by the test, no database involved)."""

from __future__ import annotations

from typing import Any

import pytest

from acta.provider.verb import Diverged, Op, Verb, VerbRun, execute, fetch_all


def _verb(log: list[str]) -> Verb[str]:
    rows = yield fetch_all("first", {}, alone=True)
    log.append(f"first -> {rows}")
    changed = yield execute("second", {})
    third = yield execute("third", {"changed": changed})
    return f"done {rows} {changed} {third}"


def _attempt(run: VerbRun[str], answers: dict[str, Any], fail_at: str | None = None) -> str:
    steps = run.steps()
    sent: Any = None
    try:
        while True:
            op, _alone = steps.send(sent)
            if op.statement == fail_at:
                raise ConnectionError(f"lost during {op.statement}")
            sent = answers[op.statement]
    except StopIteration as done:
        return str(done.value)


def test_before_any_commit_a_failed_attempt_starts_the_verb_over() -> None:
    log: list[str] = []
    run = VerbRun(lambda: _verb(log))
    with pytest.raises(ConnectionError):
        _attempt(run, {}, fail_at="first")
    assert not run.committed
    run.restart()
    assert _attempt(run, {"first": [1], "second": 1, "third": 1}) == "done [1] 1 1"
    assert log == ["first -> [1]"]


def test_after_its_first_statement_committed_the_verb_resumes_with_a_replay() -> None:
    log: list[str] = []
    run = VerbRun(lambda: _verb(log))
    answers = {"first": [1], "second": 1, "third": 1}
    with pytest.raises(ConnectionError):
        _attempt(run, answers, fail_at="third")
    assert run.committed
    seen: list[tuple[str, bool]] = []
    steps = run.steps()
    op, alone = next(steps)
    while True:
        seen.append((op.statement, alone))
        try:
            op, alone = steps.send(answers[op.statement])
        except StopIteration as done:
            assert done.value == "done [1] 1 1"
            break
    # "first" is not run again; "second" is replayed in the new transaction, then "third".
    assert seen == [("second", False), ("third", False)]
    assert log == ["first -> [1]"]  # the verb body itself never ran twice


def test_a_replay_that_answers_differently_diverges() -> None:
    run = VerbRun(lambda: _verb([]))
    with pytest.raises(ConnectionError):
        _attempt(run, {"first": [1], "second": 1, "third": 1}, fail_at="third")
    run.error = ConnectionError("lost during third")
    with pytest.raises(Diverged) as caught:
        _attempt(run, {"second": 0, "third": 1})  # the guarded update changes nothing now
    assert isinstance(caught.value.cause, ConnectionError)


def test_a_verb_with_nothing_to_run_answers_at_once() -> None:
    def nothing() -> Verb[str]:
        return "empty"
        yield Op("never", {}, "all")  # makes this a generator

    assert _attempt(VerbRun(nothing), {}) == "empty"


def _claim_like(log: list[str]) -> Verb[str]:
    probe = Op("probe", {}, "all")
    rows = yield fetch_all("claim", {}, alone=True, in_doubt=probe)
    log.append(f"claim -> {rows}")
    changed = yield execute("after", {})
    return f"done {rows} {changed}"


def _steps(run: VerbRun[str], answers: dict[str, Any]) -> tuple[list[tuple[str, bool]], str]:
    seen: list[tuple[str, bool]] = []
    steps = run.steps()
    op, alone = next(steps)
    while True:
        seen.append((op.statement, alone))
        try:
            op, alone = steps.send(answers[op.statement])
        except StopIteration as done:
            return seen, str(done.value)


def test_an_alone_statement_lost_in_flight_is_probed_and_not_run_twice() -> None:
    log: list[str] = []
    run = VerbRun(lambda: _claim_like(log))
    with pytest.raises(ConnectionError):
        _attempt(run, {}, fail_at="claim")
    run.failed(ConnectionError("reply lost"), in_doubt=True)
    seen, value = _steps(run, {"probe": [7], "claim": [9], "after": 1})
    # The probe found what the lost commit wrote: that is the claim's result.
    assert seen == [("probe", True), ("after", False)]
    assert value == "done [7] 1" and run.committed


def test_a_probe_that_finds_nothing_runs_the_statement() -> None:
    run = VerbRun(lambda: _claim_like([]))
    with pytest.raises(ConnectionError):
        _attempt(run, {}, fail_at="claim")
    run.failed(ConnectionError("reply lost"), in_doubt=True)
    seen, value = _steps(run, {"probe": [], "claim": [9], "after": 1})
    assert seen == [("probe", True), ("claim", True), ("after", False)]
    assert value == "done [9] 1"


def test_a_probe_lost_in_flight_runs_again() -> None:
    run = VerbRun(lambda: _claim_like([]))
    with pytest.raises(ConnectionError):
        _attempt(run, {}, fail_at="claim")
    run.failed(ConnectionError("reply lost"), in_doubt=True)
    with pytest.raises(ConnectionError):
        _attempt(run, {}, fail_at="probe")
    run.failed(ConnectionError("lost again"), in_doubt=True)
    seen, _ = _steps(run, {"probe": [7], "after": 1})
    assert seen == [("probe", True), ("after", False)]


def test_no_probe_without_doubt() -> None:
    # A failure that is not a lost connection (a serialization failure, say) wrote nothing;
    # so does a loss while a statement that is not alone was in flight.
    run = VerbRun(lambda: _claim_like([]))
    with pytest.raises(ConnectionError):
        _attempt(run, {}, fail_at="claim")
    run.failed(RuntimeError("serialization failure"), in_doubt=False)
    seen, _ = _steps(run, {"claim": [9], "after": 1})
    assert seen == [("claim", True), ("after", False)]
