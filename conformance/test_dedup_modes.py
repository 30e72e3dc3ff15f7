"""Deduplication modes: a key refuses a repeat for ever (the default), only while a job with it is
unfinished, or only within a window of that job's creation. The mode is recorded on the row and
shown in jobs_view; bulk enqueue honours it; two producers racing on one key in their own
transactions write one job in every mode; bad mode options are refused with nothing written.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

import pytest

from acta import Acta, JobRef, ManualClock, ValidationError
from acta.provider.protocol import Provider
from acta_testing import Host
from conformance.tenant_support import caller_transaction

if TYPE_CHECKING:
    from conformance.conftest import Ledger

MODES: dict[str, dict[str, Any]] = {
    "forever": {},
    "unfinished": {"dedup_mode": "unfinished"},
    "window": {"dedup_window": "1h"},
}


def _declare(app: Acta) -> None:
    @app.job("sync-account")
    def sync(account: int) -> None:
        return None


def _view(ledger: Ledger) -> list[tuple[Any, ...]]:
    return ledger.rows(
        "SELECT dedup_key, dedup_mode, dedup_window_ms, dedup_released_key, status "
        "FROM {schema}.jobs_view WHERE job_name = 'sync-account' ORDER BY job_id"
    )


def test_forever_refuses_the_key_after_the_job_finished(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    _declare(acta_app)
    first = acta_app.enqueue("sync-account", 1, dedup_key="acct-1")
    assert acta_host.run_until_idle() == 1
    again = acta_app.enqueue("sync-account", 2, dedup_key="acct-1", dedup_mode="forever")
    assert again == first
    assert _view(ledger) == [("acct-1", "forever", None, None, "succeeded")]


def test_unfinished_refuses_only_while_the_holder_is_unfinished(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    _declare(acta_app)
    first = acta_app.enqueue("sync-account", 1, dedup_key="acct-1", dedup_mode="unfinished")
    assert acta_app.enqueue("sync-account", 2, dedup_key="acct-1", dedup_mode="unfinished") == first
    assert acta_host.run_until_idle() == 1
    second = acta_app.enqueue("sync-account", 3, dedup_key="acct-1", dedup_mode="unfinished")
    assert second != first
    assert _view(ledger) == [
        (None, "unfinished", None, "acct-1", "succeeded"),
        ("acct-1", "unfinished", None, None, "ready"),
    ]
    # A forever request is refused by whichever job holds the key now.
    assert acta_app.enqueue("sync-account", 4, dedup_key="acct-1") == second


def test_a_window_refuses_until_it_has_passed_since_the_holder_was_created(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    _declare(acta_app)
    first = acta_app.enqueue("sync-account", 1, dedup_key="acct-1", dedup_window="1h")
    assert acta_host.run_until_idle() == 1  # finished, but the window still holds the key
    acta_host.advance("59m59s")
    assert acta_app.enqueue("sync-account", 2, dedup_key="acct-1", dedup_window="1h") == first
    acta_host.advance("1s")
    second = acta_app.enqueue(
        "sync-account", 3, dedup_key="acct-1", dedup_mode="window", dedup_window=3600
    )
    assert second != first
    # An unfinished holder is no exception: the window alone decides.
    acta_host.advance("2h")
    third = acta_app.enqueue("sync-account", 4, dedup_key="acct-1", dedup_window="1h")
    assert third not in (first, second)
    assert [row[:4] for row in _view(ledger)] == [
        (None, "window", 3_600_000, "acct-1"),
        (None, "window", 3_600_000, "acct-1"),
        ("acct-1", "window", 3_600_000, None),
    ]


def test_bulk_enqueue_honours_each_requests_mode(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    _declare(acta_app)
    done = acta_app.enqueue("sync-account", 0, dedup_key="done")
    kept = acta_app.enqueue("sync-account", 0, dedup_key="kept")
    assert acta_host.run_until_idle() == 2
    refs = acta_app.enqueue_batch(
        [
            acta_app.request("sync-account", 1, dedup_key="done", dedup_mode="unfinished"),
            acta_app.request("sync-account", 2, dedup_key="kept"),
            acta_app.request("sync-account", 3, dedup_key="fresh", dedup_window="10m"),
        ]
    )
    assert refs[0] not in (done, kept) and refs[1] == kept
    assert ledger.user_jobs() == 4
    assert [(r[0], r[1]) for r in _view(ledger)] == [
        (None, "forever"),
        ("kept", "forever"),
        ("done", "unfinished"),
        ("fresh", "window"),
    ]


@pytest.mark.parametrize("mode", sorted(MODES))
def test_two_producers_racing_on_one_key_write_one_job(
    mode: str,
    acta_app: Acta,
    acta_host: Host,
    acta_provider: Provider,
    acta_clock: ManualClock,
    ledger: Ledger,
) -> None:
    _declare(acta_app)
    options = MODES[mode]
    # A holder that no longer counts in modes unfinished and window: both racers release it.
    old = acta_app.enqueue("sync-account", 0, dedup_key="acct-9")
    assert acta_host.run_until_idle() == 1
    acta_host.advance("2h")
    other = Acta()  # the second producer: another process, its own connection
    _declare(other)
    got: dict[str, JobRef | BaseException] = {}

    def second() -> None:
        try:
            with other.bound(acta_provider, acta_clock), caller_transaction(acta_provider) as b:
                got["b"] = other.enqueue(
                    "sync-account", 2, dedup_key="acct-9", connection=b, **options
                )
        except BaseException as exc:  # reported below, not lost in the thread
            got["b"] = exc

    with caller_transaction(acta_provider) as a:
        got["a"] = acta_app.enqueue("sync-account", 1, dedup_key="acct-9", connection=a, **options)
        racer = threading.Thread(target=second)
        racer.start()  # it writes while the first transaction is still open
    racer.join()
    assert not isinstance(got["b"], BaseException), got["b"]
    assert got["a"] == got["b"]
    expected = 1 if mode == "forever" else 2
    assert ledger.user_jobs() == expected
    if mode == "forever":
        assert got["a"] == old
    else:
        assert got["a"] != old
        assert (
            ledger.value("SELECT count(*) FROM {schema}.jobs_view WHERE dedup_key = 'acct-9'") == 1
        )


@pytest.mark.parametrize(
    ("options", "field", "fragment"),
    [
        ({"dedup_mode": "unfinished"}, "dedup_mode", "without a dedup_key"),
        ({"dedup_window": "1h"}, "dedup_window", "without a dedup_key"),
        ({"dedup_key": "k", "dedup_mode": "while-running"}, "dedup_mode", "'unfinished'"),
        ({"dedup_key": "k", "dedup_mode": "window"}, "dedup_window", "needs a window"),
        (
            {"dedup_key": "k", "dedup_mode": "unfinished", "dedup_window": "1h"},
            "dedup_window",
            "dedup_mode='unfinished'",
        ),
        ({"dedup_key": "k", "dedup_window": 0}, "dedup_window", ""),
        ({"dedup_key": "k", "dedup_window": "0s"}, "dedup_window", ""),
        ({"dedup_key": "k", "dedup_window": "soon"}, "dedup_window", ""),
        ({"dedup_key": "k", "dedup_window": "-1h"}, "dedup_window", ""),
    ],
)
def test_bad_mode_options_are_refused_with_nothing_written(
    acta_app: Acta, ledger: Ledger, options: dict[str, Any], field: str, fragment: str
) -> None:
    _declare(acta_app)
    with pytest.raises(ValidationError, match=fragment or None) as refused:
        acta_app.enqueue("sync-account", 1, **options)
    assert refused.value.field == field
    with pytest.raises(ValidationError):
        acta_app.request("sync-account", 1, **options)
    assert ledger.user_jobs() == 0
