"""Bad payloads: refused at the call site with a typed error, nothing written, never truncated;
a stored input that no longer decodes fails its job once, for good, and the worker carries on."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import pytest

from acta import (
    Acta,
    EventCode,
    JobStatus,
    ManualClock,
    Outcome,
    PayloadError,
    PayloadTooLargeError,
    Reason,
    ValidationError,
)
from acta.codec import DEFAULT_PAYLOAD_CAP, MAX_DEPTH
from acta.provider.protocol import Provider
from acta_testing import Host

if TYPE_CHECKING:
    from conformance.conftest import Ledger


# -- the size cap --------------------------------------------------------------------------


def test_default_cap_counts_encoded_bytes(acta_app: Acta, acta_host: Host, ledger: Ledger) -> None:
    received: list[int] = []

    @acta_app.job("store-text")
    def store(text: str) -> None:
        received.append(len(text.encode("utf-8")))

    # Two bytes per character: the cap is on encoded bytes, not on characters.
    at_cap = "\u00e9" * (DEFAULT_PAYLOAD_CAP // 2)
    ref = store.enqueue(at_cap)
    stored = acta_app.get(ref).input
    assert stored is not None and len(stored) == DEFAULT_PAYLOAD_CAP
    assert stored == at_cap.encode("utf-8")

    over = at_cap + "a"
    with pytest.raises(PayloadTooLargeError) as caught:
        store.enqueue(over)
    message = str(caught.value)
    assert f"{DEFAULT_PAYLOAD_CAP + 1} bytes" in message
    assert f"{DEFAULT_PAYLOAD_CAP} bytes" in message
    assert caught.value.field == "input"
    assert isinstance(caught.value, PayloadError) and isinstance(caught.value, ValidationError)
    assert ledger.user_jobs() == 1

    assert acta_host.tick() == "completed"
    assert received == [DEFAULT_PAYLOAD_CAP]  # the whole payload arrived, not a cut one


@pytest.fixture
def small_app(acta_provider: Provider, acta_clock: ManualClock) -> Any:
    app = Acta(payload_cap=64)
    with app.bound(acta_provider, acta_clock):
        yield app


def test_application_cap_applies_to_every_codec(small_app: Acta, ledger: Ledger) -> None:
    @small_app.job("as-text")
    def as_text(text: str) -> None:
        pass

    @small_app.job("as-bytes")
    def as_bytes(blob: bytes) -> None:
        pass

    @small_app.job("as-json")
    def as_json(payload: dict[str, str]) -> None:
        pass

    # {"s":"..."} adds 8 bytes around the string.
    accepted = [
        as_text.enqueue("t" * 64),
        as_bytes.enqueue(b"\x00" * 64),
        as_json.enqueue({"s": "j" * 56}),
    ]
    assert [len(small_app.get(r).input or b"") for r in accepted] == [64, 64, 64]
    before = ledger.snapshot()

    for refused in (
        lambda: as_text.enqueue("t" * 65),
        lambda: as_bytes.enqueue(b"\x00" * 65),
        lambda: as_json.enqueue({"s": "j" * 57}),
        lambda: small_app.enqueue_batch([as_text.request("ok"), as_json.request({"s": "j" * 57})]),
    ):
        with pytest.raises(PayloadTooLargeError, match=r"65 bytes.*the cap is 64 bytes"):
            refused()
    assert ledger.snapshot() == before


@pytest.mark.parametrize("cap", [0, -1, True, 1.5, "1MB", None])
def test_cap_must_be_a_positive_int(cap: Any) -> None:
    with pytest.raises(ValidationError, match="payload_cap"):
        Acta(payload_cap=cap)


# -- values that cannot be stored ----------------------------------------------------------


def _nested(levels: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(levels - 1):
        value = [value]
    return value


class Opaque:
    pass


@pytest.mark.parametrize(
    ("value", "where"),
    [
        (math.nan, "input"),
        (math.inf, "input"),
        ({"rate": -math.inf}, "input.rate"),
        ([1, 2, math.nan], "input[2]"),
        ("lone \ud800 surrogate", "input"),
        ({"name": "x\udfffy"}, "input.name"),
        ({"\ud83d": 1}, "input"),
        ("nul \x00 inside", "input"),
        ({"k": ["ok", "a\x00"]}, "input.k[1]"),
        ({"nul\x00key": 1}, "input"),
        (_nested(MAX_DEPTH + 1), "input"),
        (Opaque(), "input"),
        ({"when": datetime(2026, 1, 1, tzinfo=UTC)}, "input.when"),
        ({"items": {1, 2}}, "input.items"),
        ({1: "int key"}, "input"),
        ({"raw": b"bytes"}, "input.raw"),
    ],
    ids=lambda v: type(v).__name__ if not isinstance(v, str) else v[:12],
)
def test_unstorable_values_are_refused_at_the_call_site(
    acta_app: Acta, acta_host: Host, ledger: Ledger, value: Any, where: str
) -> None:
    @acta_app.job("ingest")
    def ingest(payload: Any) -> None:
        pass

    with pytest.raises(PayloadError) as caught:
        ingest.enqueue(value)
    assert caught.value.field.startswith(where), caught.value.field
    with pytest.raises(PayloadError):
        acta_app.request("ingest", value)
    assert ledger.snapshot() == dict.fromkeys(ledger.snapshot(), 0)


def test_nesting_limit_is_exact(acta_app: Acta, acta_host: Host, ledger: Ledger) -> None:
    received: list[Any] = []

    @acta_app.job("ingest")
    def ingest(payload: Any) -> None:
        received.append(payload)

    deepest = _nested(MAX_DEPTH)
    ingest.enqueue(deepest)
    with pytest.raises(PayloadError, match=f"deeper than {MAX_DEPTH}"):
        ingest.enqueue(_nested(MAX_DEPTH + 1))
    with pytest.raises(PayloadError):
        ingest.enqueue({"wrap": _nested(MAX_DEPTH)})  # one more level around it
    assert ledger.user_jobs() == 1
    assert acta_host.tick() == "completed"
    assert received == [deepest]


@dataclass
class Reading:
    sensor: str
    value: float


@pytest.mark.parametrize(
    "value",
    [
        Reading("t1", math.nan),
        Reading("t\x00", 1.0),
        {"sensor": "t1", "value": 1.0},  # a dict is not a Reading
        Reading("t1", True),  # type: ignore[arg-type]  # a bool is not a number here
    ],
)
def test_typed_inputs_are_checked_against_their_annotation(
    acta_app: Acta, acta_host: Host, ledger: Ledger, value: Any
) -> None:
    @acta_app.job("record")
    def record(reading: Reading) -> None:
        pass

    with pytest.raises(PayloadError):
        record.enqueue(value)
    assert ledger.user_jobs() == 0


@pytest.mark.parametrize("value", ["nul\x00", "half \udc00 pair", 42, b"bytes"])
def test_text_inputs_refuse_what_text_cannot_hold(
    acta_app: Acta, acta_host: Host, ledger: Ledger, value: Any
) -> None:
    @acta_app.job("shout")
    def shout(text: str) -> None:
        pass

    with pytest.raises(PayloadError):
        shout.enqueue(value)
    assert ledger.user_jobs() == 0


def test_input_for_a_job_without_one_is_refused(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    @acta_app.job("tick-tock")
    def tick_tock() -> None:
        pass

    with pytest.raises(ValidationError, match="takes no input"):
        tick_tock.enqueue({"unexpected": True})
    assert ledger.user_jobs() == 0


# -- stored input that no longer decodes ---------------------------------------------------


@dataclass
class CountV1:
    count: int


@dataclass
class CountV2:
    count: int
    unit: str  # added without a default: old payloads lack it


def _assert_failed_once(app: Acta, host: Host, ref: Any, fragment: str) -> None:
    job = app.get(ref)
    assert job.status is JobStatus.FAILED
    assert (job.attempts, job.executions) == (1, 1)
    events = app.events(ref)
    assert [e.code for e in events] == [
        EventCode.ENQUEUED,
        EventCode.EXECUTION_STARTED,
        EventCode.EXECUTION_FINISHED,
        EventCode.FAILED,
    ]
    finished, failed = events[2], events[3]
    assert finished.outcome is Outcome.FAILED
    assert finished.reason is Reason.INPUT_UNDECODABLE
    assert fragment in (finished.message or "")
    assert failed.reason is Reason.INPUT_UNDECODABLE
    assert host.run_until_idle() == 0  # no retry storm
    assert app.get(ref).executions == 1


def test_input_from_an_older_type_fails_the_job_once(
    acta_app: Acta, acta_host: Host, acta_provider: Provider, acta_clock: ManualClock
) -> None:
    calls: list[CountV2] = []

    @acta_app.job("count-items")
    def count_items(items: CountV2) -> None:
        calls.append(items)

    producer = Acta()  # an older build that still enqueues the first shape
    producer.define("count-items", input=CountV1)
    with producer.bound(acta_provider, acta_clock):
        ref = producer.enqueue("count-items", CountV1(3))

    assert acta_host.tick() == "failed"
    assert calls == []
    _assert_failed_once(acta_app, acta_host, ref, "'unit'")

    # The worker is unaffected: the next job of the same definition runs.
    good = count_items.enqueue(CountV2(4, "boxes"))
    assert acta_host.tick() == "completed"
    assert calls == [CountV2(4, "boxes")]
    assert acta_app.get(good).status is JobStatus.SUCCEEDED


@pytest.mark.parametrize(
    ("stored", "codec", "fragment"),
    [
        (b"\xff\xfe{", 1, "UTF-8"),
        (b'{"count": ', 1, "not valid JSON"),
        (b'{"count": "three"}', 1, "input.count"),
        (b'{"count": NaN}', 1, "NaN"),
        (b'{"count": 3}', 200, "codec code 200"),
    ],
)
def test_corrupted_stored_input_fails_the_job_once(
    acta_app: Acta, acta_host: Host, ledger: Ledger, stored: bytes, codec: int, fragment: str
) -> None:
    calls: list[CountV1] = []

    @acta_app.job("count-items")
    def count_items(items: CountV1) -> None:
        calls.append(items)

    ref = count_items.enqueue(CountV1(3))
    changed = ledger.execute(
        "UPDATE {schema}.jobs SET input = :input, input_codec = :codec WHERE job_ref = :ref",
        {"input": stored, "codec": codec, "ref": str(ref)},
    )
    assert changed == 1
    assert acta_host.tick() == "failed"
    assert calls == []
    _assert_failed_once(acta_app, acta_host, ref, fragment)
