"""The producer surface: single and batch enqueue, sync and async, and the refs it returns."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest

from acta import (
    Acta,
    InvalidJobRefError,
    InvalidNameError,
    InvalidPolicyError,
    JobRef,
    JobStatus,
    PayloadTooLargeError,
    UnknownJobError,
    ValidationError,
)
from acta.codec import DEFAULT_PAYLOAD_CAP
from acta.provider.protocol import Provider
from acta_testing import AsyncHost, Host

if TYPE_CHECKING:
    from conformance.conftest import Ledger

# 'job_' and 26 lowercase Crockford base32 characters (no i, l, o, u).
REF_TEXT = re.compile(r"job_[0-9a-hjkmnp-tv-z]{26}")


def test_enqueue_returns_a_ref_to_one_ready_job(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    @acta_app.job("send-welcome")
    def send(user: str) -> str:
        return f"welcome, {user}"

    start = acta_host.clock.now()
    by_name = acta_app.enqueue("send-welcome", "ada")
    by_definition = send.enqueue("grace")
    by_object = acta_app.enqueue(send, "linus")

    for ref in (by_name, by_definition, by_object):
        assert isinstance(ref, JobRef)
        assert REF_TEXT.fullmatch(str(ref)), str(ref)
        assert ref.created_at_ms == int(start.timestamp() * 1000)
    assert len({by_name, by_definition, by_object}) == 3

    info = acta_app.get(by_name)
    assert info.job_ref == str(by_name)
    assert (info.name, info.namespace, info.status) == ("send-welcome", "default", JobStatus.READY)
    assert (info.attempts, info.executions, info.max_attempts, info.priority) == (0, 0, 15, 0)
    assert info.next_run_at == start and info.created_at == start
    assert info.input == b"ada" and info.input_codec == 2
    assert (info.dedup_key, info.correlation_key, info.tags) == (None, None, ())
    assert ledger.user_jobs() == 3
    assert acta_host.event_names(by_name) == ["enqueued"]

    assert acta_host.run_until_idle() == 3
    assert [acta_app.result(r) for r in (by_name, by_definition, by_object)] == [
        "welcome, ada",
        "welcome, grace",
        "welcome, linus",
    ]


async def test_async_enqueue_twins(acta_app: Acta, acta_async_host: AsyncHost) -> None:
    @acta_app.job("add-one")
    async def add_one(n: int) -> int:
        return n + 1

    first = await acta_app.enqueue_async("add-one", 1)
    second = await add_one.enqueue_async(2)
    third, fourth = await acta_app.enqueue_batch_async(
        [add_one.request(3), acta_app.request("add-one", 4)]
    )
    refs = [first, second, third, fourth]
    assert all(REF_TEXT.fullmatch(str(r)) for r in refs)
    assert [(await acta_app.get_async(r)).input for r in refs] == [b"1", b"2", b"3", b"4"]
    assert await acta_app.enqueue_batch_async([]) == []

    assert await acta_async_host.run_until_idle() == 4
    assert [await acta_app.result_async(r) for r in refs] == [2, 3, 4, 5]


def test_ref_text_reads_back_in_any_case_and_with_look_alikes(
    acta_app: Acta, acta_host: Host
) -> None:
    @acta_app.job("noop")
    def noop() -> None:
        pass

    ref = noop.enqueue()
    text = str(ref)
    body = text[len("job_") :]
    # The first character holds the top bits of a 2026 millisecond: always '0'.
    assert body[0] == "0"

    assert JobRef.parse(text.upper()) == ref
    assert JobRef.parse("JoB_" + body.upper()) == ref
    for zero, one in (("o", "l"), ("O", "I"), ("o", "i"), ("O", "L")):
        aliased = "job_" + body.replace("0", zero).replace("1", one)
        assert aliased != text
        assert JobRef.parse(aliased) == ref
    assert str(JobRef.parse(text.upper())) == text  # printed back canonical
    assert acta_app.get(text.upper()).job_ref == text
    assert acta_app.get("job_" + body.replace("0", "o")).job_ref == text

    for bad in ("job_" + body[:-1], "job_" + body + "0", "job_" + "u" * 26, "jb_" + body, ""):
        with pytest.raises(InvalidJobRefError):
            JobRef.parse(bad)
    with pytest.raises(InvalidJobRefError):
        acta_app.get("job_8" + body[1:])  # over 128 bits


# -- batches --------------------------------------------------------------------------------


def test_batch_refs_come_back_in_request_order(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    @acta_app.job("resize")
    def resize(n: int) -> int:
        return n * 10

    @acta_app.job("notify")
    def notify(message: str) -> str:
        return message.upper()

    refs = acta_app.enqueue_batch(
        [
            resize.request(1),
            notify.request("hello", priority=5),
            resize.request(3, tags=["thumb"]),
            acta_app.request("notify", "bye"),
        ]
    )
    infos = [acta_app.get(r) for r in refs]
    assert [i.name for i in infos] == ["resize", "notify", "resize", "notify"]
    assert [i.input for i in infos] == [b"1", b"hello", b"3", b"bye"]
    assert [i.priority for i in infos] == [0, 5, 0, 0]
    assert infos[2].tags == ("thumb",)
    ids = [i.job_id for i in infos]
    assert ids == sorted(ids) and len(set(ids)) == 4
    assert ledger.user_jobs() == 4 and ledger.count("events") == 4
    assert acta_app.enqueue_batch([]) == []

    assert acta_host.run_until_idle() == 4
    assert [acta_app.result(r) for r in refs] == [10, "HELLO", 30, "BYE"]


def test_batch_is_one_transaction(acta_app: Acta, acta_host: Host, ledger: Ledger) -> None:
    @acta_app.job("ingest")
    def ingest(n: int) -> None:
        pass

    # The database refuses the third row: the two before it must go too.
    refused = ledger.refuse_inserts("jobs", "NEW.dedup_key = 'poison'", "poison row refused")
    with pytest.raises(refused, match="poison row refused"):
        acta_app.enqueue_batch(
            [ingest.request(1), ingest.request(2), ingest.request(3, dedup_key="poison")]
        )
    assert ledger.snapshot() == dict.fromkeys(ledger.snapshot(), 0)

    refs = acta_app.enqueue_batch([ingest.request(4), ingest.request(5)])
    assert [acta_app.get(r).input for r in refs] == [b"4", b"5"]
    assert ledger.user_jobs() == 2


def _spy_on_sql(provider: Provider, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record every verb run through the provider (sync or async)."""
    calls: list[str] = []
    run, run_async = provider.run, provider.run_async

    def spy_run(make: Callable[[], Any], **kwargs: Any) -> Any:
        calls.append("run")
        return run(make, **kwargs)

    async def spy_run_async(make: Callable[[], Any], **kwargs: Any) -> Any:
        calls.append("run_async")
        return await run_async(make, **kwargs)

    monkeypatch.setattr(provider, "run", spy_run)
    monkeypatch.setattr(provider, "run_async", spy_run_async)
    return calls


@pytest.mark.parametrize(
    ("bad_option", "error"),
    [
        ({"priority": 500}, InvalidPolicyError),
        ({"delay": "soon"}, ValidationError),
        ({"tags": "solo"}, InvalidNameError),
        ({"dedup_key": " padded"}, InvalidNameError),
    ],
)
def test_batch_with_a_bad_option_writes_nothing(
    acta_app: Acta,
    acta_host: Host,
    acta_provider: Provider,
    ledger: Ledger,
    monkeypatch: pytest.MonkeyPatch,
    bad_option: dict[str, Any],
    error: type[Exception],
) -> None:
    @acta_app.job("ingest")
    def ingest(n: int) -> None:
        pass

    ingest.enqueue(0)
    before = ledger.snapshot()
    calls = _spy_on_sql(acta_provider, monkeypatch)
    with pytest.raises(error):
        acta_app.enqueue_batch([ingest.request(1), ingest.request(2, **bad_option)])
    with pytest.raises(error):
        acta_app.enqueue("ingest", 3, **bad_option)
    assert calls == []
    assert ledger.snapshot() == before


def test_batch_with_an_oversized_member_writes_nothing(
    acta_app: Acta,
    acta_host: Host,
    acta_provider: Provider,
    ledger: Ledger,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    @acta_app.job("store-blob")
    def store(blob: bytes) -> None:
        pass

    calls = _spy_on_sql(acta_provider, monkeypatch)
    with pytest.raises(PayloadTooLargeError):
        acta_app.enqueue_batch(
            [store.request(b"small"), store.request(b"\0" * (DEFAULT_PAYLOAD_CAP + 1))]
        )
    assert calls == []
    assert ledger.user_jobs() == 0


def test_batch_members_checked_by_the_app_before_any_sql(
    acta_app: Acta,
    acta_host: Host,
    acta_provider: Provider,
    ledger: Ledger,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    @acta_app.job("ingest")
    def ingest(n: int) -> None:
        pass

    elsewhere = Acta()

    @elsewhere.job("foreign")
    def foreign(n: int) -> None:
        pass

    calls = _spy_on_sql(acta_provider, monkeypatch)
    with pytest.raises(UnknownJobError, match="'foreign'"):
        acta_app.enqueue_batch([ingest.request(1), foreign.request(2)])
    with pytest.raises(ValidationError, match="JobRequest"):
        acta_app.enqueue_batch([ingest.request(1), {"job": "ingest"}])  # type: ignore[list-item]
    assert calls == []
    assert ledger.user_jobs() == 0


async def test_async_batch_with_a_bad_member_writes_nothing(
    acta_app: Acta,
    acta_async_host: AsyncHost,
    acta_provider: Provider,
    ledger: Ledger,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    @acta_app.job("ingest")
    async def ingest(n: int) -> None:
        pass

    other = Acta()
    stranger = other.define("ingest", input=int)
    calls = _spy_on_sql(acta_provider, monkeypatch)
    with pytest.raises(UnknownJobError, match="another application"):
        await acta_app.enqueue_batch_async([ingest.request(1), stranger.request(2)])
    with pytest.raises(InvalidPolicyError):
        await acta_app.enqueue_async("ingest", 1, priority=-101)
    assert calls == []
    assert ledger.user_jobs() == 0
