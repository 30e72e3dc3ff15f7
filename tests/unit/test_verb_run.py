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
