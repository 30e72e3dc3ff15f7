"""Codecs chosen per job: the codec's code is stored on the row, so a job is decoded with the
codec that wrote it, whatever the definition says later; the payload cap counts encoded bytes;
a codec that cannot encode refuses the enqueue whole, and one that cannot decode fails the job
once with a reason naming it, never the worker.

The codecs are registered process-wide (as users do); their names and codes are this module's
own so that no other test or docs example registering a ``msgpack`` of its own collides.
"""

from __future__ import annotations

import gzip
import json
import random
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import msgpack
import pytest

from acta import (
    Acta,
    EventCode,
    FunctionCodec,
    InputDecodeError,
    JobStatus,
    ManualClock,
    PayloadError,
    PayloadTooLargeError,
    Reason,
    UnknownCodecError,
    ValidationError,
    codecs,
)
from acta.provider.protocol import Provider
from acta_testing import Host

if TYPE_CHECKING:
    from conformance.conftest import Ledger


def _gzip_json(value: object) -> bytes:
    return gzip.compress(json.dumps(value, separators=(",", ":")).encode(), mtime=0)


def _gunzip_json(data: bytes) -> object:
    return json.loads(gzip.decompress(data))


SPEC_MSGPACK = FunctionCodec("spec.msgpack", 240, encode=msgpack.packb, decode=msgpack.unpackb)
SPEC_GZIP = FunctionCodec("spec.gzip", 241, encode=_gzip_json, decode=_gunzip_json)


class Picky:
    """Encodes only lists, and cannot decode anything a worker gives it back."""

    name = "spec.picky"
    code = 242

    def encode(self, value: object) -> bytes:
        if not isinstance(value, list):
            raise TypeError(f"picky takes lists, not {type(value).__name__}")
        return json.dumps(value).encode()

    def decode(self, data: bytes) -> object:
        raise ValueError("picky lost its decoder ring")


PICKY = Picky()


def _fragile_decode(data: bytes) -> object:
    if data == b'"poison"':
        raise ValueError("poisoned payload")
    return json.loads(data)


FRAGILE = FunctionCodec("spec.fragile", 243, encode=lambda v: json.dumps(v).encode(),
                        decode=_fragile_decode)  # fmt: skip


@dataclass(frozen=True)
class Thumbnail:
    image: str
    width: int
    tags: list[str]


def test_a_registered_codec_writes_its_code_and_round_trips_input_and_result(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    assert codecs.register(SPEC_MSGPACK) is SPEC_MSGPACK  # as a module of the application does
    seen: list[Thumbnail] = []

    @acta_app.job("thumbnail", codec="spec.msgpack")
    def thumbnail(job: Thumbnail) -> dict[str, int]:
        seen.append(job)
        return {"width": job.width, "height": job.width // 2}

    ref = thumbnail.enqueue(Thumbnail("cat.png", 640, ["pet", "é"]))
    assert ledger.value("SELECT input_codec FROM {schema}.jobs") == 240
    body = bytes(ledger.value("SELECT input FROM {schema}.jobs"))
    assert msgpack.unpackb(body) == {"image": "cat.png", "width": 640, "tags": ["pet", "é"]}
    assert acta_host.tick() == "completed"
    assert seen == [Thumbnail("cat.png", 640, ["pet", "é"])]
    assert ledger.value("SELECT codec FROM {schema}.results") == 240
    assert acta_app.result(ref) == {"width": 640, "height": 320}


def test_a_codec_object_is_registered_by_the_declaration(acta_app: Acta) -> None:
    # Passing the object works in a process that never registered it by name.
    definition = acta_app.define("archive", codec=SPEC_GZIP)
    assert definition.input_codec is SPEC_GZIP and definition.result_codec is SPEC_GZIP
    assert codecs.by_name("spec.gzip") is SPEC_GZIP


def test_old_rows_decode_with_the_codec_that_wrote_them(
    acta_app: Acta, acta_host: Host, acta_provider: Provider, acta_clock: ManualClock
) -> None:
    seen: list[list[int]] = []

    @acta_app.job("sum", codec=SPEC_GZIP)  # today's build compresses
    def total(numbers: list[int]) -> int:
        seen.append(numbers)
        return sum(numbers)

    older = Acta()  # yesterday's build enqueued plain JSON
    older.define("sum", input=list[int])
    with older.bound(acta_provider, acta_clock):
        old = older.enqueue("sum", [1, 2, 3])
    new = total.enqueue([4, 5])
    assert {j.job_ref: j.input_codec for j in acta_host.jobs()} == {str(old): 1, str(new): 241}
    assert acta_host.run_until_idle() == 2
    assert seen == [[1, 2, 3], [4, 5]]
    assert acta_app.result(old) == 6 and acta_app.result(new) == 9


def test_the_cap_counts_encoded_bytes(acta_host: Host) -> None:
    app = Acta(payload_cap=4096, codecs=[SPEC_GZIP])
    packed = app.define("packed", input=str, codec="spec.gzip")
    plain = app.define("plain", input=str)
    text = "all work and no play " * 1000  # 21 000 characters, a few hundred bytes gzipped
    with app.bound(acta_host.provider, acta_host.clock):
        packed.enqueue(text)
        with pytest.raises(PayloadTooLargeError, match="21000 bytes"):
            plain.enqueue(text)
        noise = random.Random(7).randbytes(6000).hex()  # gzip cannot shrink it to 4 KiB
        with pytest.raises(PayloadTooLargeError, match="the cap is 4096 bytes"):
            packed.enqueue(noise)
        assert [j.name for j in acta_host.jobs()] == ["packed"]


def test_an_unknown_codec_name_fails_at_declaration(acta_app: Acta) -> None:
    with pytest.raises(UnknownCodecError, match="'yaml'") as found:

        @acta_app.job("parse", codec="yaml")
        def parse(text: str) -> None:
            raise AssertionError("never declared")

    assert isinstance(found.value, ValidationError)
    assert "registered: json, text, bytes" in str(found.value)
    assert "parse" not in acta_app.definitions
    with pytest.raises(UnknownCodecError):
        acta_app.define("parse", codec="")


@pytest.mark.parametrize(
    ("codec", "problem"),
    [
        (FunctionCodec("Bad Name", 244, encode=bytes, decode=bytes), "not a valid codec name"),
        (FunctionCodec("spec.low", 5, encode=bytes, decode=bytes), "128 to 255"),
        (FunctionCodec("spec.clash", 240, encode=bytes, decode=bytes), "taken by 'spec.msgpack'"),
        (FunctionCodec("json", 245, encode=bytes, decode=bytes), "a codec named 'json' exists"),
    ],
)
def test_a_bad_codec_is_refused_when_registered(codec: FunctionCodec, problem: str) -> None:
    codecs.register(SPEC_MSGPACK)
    before = codecs.names()
    with pytest.raises(ValidationError, match=problem):
        Acta(codecs=[codec])
    assert codecs.names() == before


def test_a_codec_that_cannot_encode_refuses_the_enqueue_whole(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    @acta_app.job("tally", codec=PICKY)
    def tally(value: Any) -> None:
        raise AssertionError("never runs")

    with pytest.raises(PayloadError, match=r"input: codec 'spec\.picky' could not encode"):
        tally.enqueue({"not": "a list"})
    with pytest.raises(PayloadError, match=r"spec\.picky"):
        acta_app.enqueue_batch([tally.request({"also": "refused"})])
    assert ledger.user_jobs() == 0
    assert acta_host.jobs() == []


def test_a_codec_that_cannot_decode_fails_the_job_once_and_the_worker_goes_on(
    acta_app: Acta, acta_host: Host
) -> None:
    ran: list[Any] = []

    @acta_app.job("tally", codec=PICKY)
    def tally(value: Any) -> None:
        ran.append(value)

    @acta_app.job("next")
    def after(value: int) -> None:
        ran.append(value)

    broken = tally.enqueue([1, 2])
    fine = after.enqueue(7)
    assert acta_host.tick() == "failed"
    job = acta_app.get(broken)
    assert job.status is JobStatus.FAILED and job.executions == 1
    finished = [e for e in acta_app.events(broken) if e.code is EventCode.EXECUTION_FINISHED]
    assert [e.reason for e in finished] == [Reason.INPUT_UNDECODABLE]
    assert "codec 'spec.picky' could not decode" in (finished[0].message or "")
    assert "decoder ring" in (finished[0].message or "")
    assert acta_host.tick() == "completed"
    assert ran == [7]
    assert acta_app.get(fine).status is JobStatus.SUCCEEDED
    assert acta_host.run_until_idle() == 0  # no retry of the undecodable job


def test_a_stored_result_the_codec_cannot_decode_is_an_input_decode_error(
    acta_app: Acta, acta_host: Host
) -> None:
    @acta_app.job("brew", codec=FRAGILE)
    def brew(kind: str) -> str:
        return kind.lower()  # the input decodes; a "poison" result will not

    good, bad = brew.enqueue("TEA"), brew.enqueue("POISON")
    assert acta_host.run_until_idle() == 2
    assert acta_app.result(good) == "tea"
    with pytest.raises(InputDecodeError, match=r"result: codec 'spec\.fragile' could not decode"):
        acta_app.result(bad)
