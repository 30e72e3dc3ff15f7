"""Job refs, UUIDv7 layout and worker incarnations."""

from __future__ import annotations

import re
from uuid import UUID

import pytest
from hypothesis import given
from hypothesis import strategies as st

from acta.errors import InvalidJobRefError, ValidationError
from acta.ids import JobRef, new_incarnation, uuid7

MAX_MS = (1 << 48) - 1
ms_values = st.integers(min_value=0, max_value=MAX_MS)
rand_values = st.binary(min_size=10, max_size=10)
uuids = st.integers(min_value=0, max_value=(1 << 128) - 1).map(lambda n: UUID(int=n))


class TestUuid7:
    def test_known_layout(self) -> None:
        value = uuid7(0x0123_4567_89AB, bytes(range(10)))
        assert value.version == 7
        assert str(value).startswith("01234567-89ab-7")
        # Variant 10 means the top two bits of the clock_seq byte are 1 and 0.
        assert value.int >> 62 & 0b11 == 0b10

    @given(ms_values, rand_values)
    def test_fields(self, ms: int, rand: bytes) -> None:
        value = uuid7(ms, rand)
        assert value.version == 7
        assert value.variant == "specified in RFC 4122"
        assert value.int >> 80 == ms
        bits = int.from_bytes(rand, "big")
        assert (value.int >> 64) & 0xFFF == (bits >> 62) & 0xFFF
        assert value.int & ((1 << 62) - 1) == bits & ((1 << 62) - 1)

    def test_random_when_not_given(self) -> None:
        assert uuid7(1000) != uuid7(1000)

    @pytest.mark.parametrize("ms", [-1, 1 << 48, True, 1.5])
    def test_bad_ms(self, ms: object) -> None:
        with pytest.raises(ValidationError) as info:
            uuid7(ms)  # type: ignore[arg-type]
        assert info.value.field == "ms"

    @pytest.mark.parametrize("rand", [b"", bytes(9), bytes(11), "x" * 10])
    def test_bad_rand(self, rand: object) -> None:
        with pytest.raises(ValidationError):
            uuid7(5, rand)  # type: ignore[arg-type]

    @given(ms_values, ms_values, rand_values, rand_values)
    def test_sorted_by_time(self, a: int, b: int, ra: bytes, rb: bytes) -> None:
        if a < b:
            assert uuid7(a, ra) < uuid7(b, rb)


class TestJobRefText:
    def test_zero_and_max(self) -> None:
        assert str(JobRef(UUID(int=0))) == "job_" + "0" * 26
        assert str(JobRef(UUID(int=(1 << 128) - 1))) == "job_7" + "z" * 25

    def test_known_value(self) -> None:
        ref = JobRef(UUID(int=32 * 5 + 31))
        assert str(ref) == "job_" + "0" * 24 + "5z"
        assert repr(ref) == "JobRef('job_" + "0" * 24 + "5z')"

    @given(uuids)
    def test_round_trip(self, value: UUID) -> None:
        ref = JobRef.from_uuid(value)
        text = str(ref)
        assert re.fullmatch(r"job_[0-7][0-9a-hjkmnp-tv-z]{25}", text)
        assert JobRef.parse(text) == ref
        assert JobRef.parse(text.upper()) == ref
        assert JobRef.coerce(text) == ref

    @given(uuids, uuids)
    def test_text_order_matches_uuid_order(self, a: UUID, b: UUID) -> None:
        assert (str(JobRef(a)) < str(JobRef(b))) == (a < b)
        assert (JobRef(a) < JobRef(b)) == (a < b)

    def test_aliases(self) -> None:
        canonical = JobRef.parse("job_" + "0" * 24 + "11")
        assert JobRef.parse("job_" + "o" * 24 + "il") == canonical
        assert JobRef.parse("JOB_" + "O" * 24 + "IL") == canonical
        assert JobRef.parse("Job_" + "0" * 24 + "1L") == canonical

    @pytest.mark.parametrize(
        ("text", "needle"),
        [
            ("job_" + "0" * 25 + "u", "'u'"),
            ("job_" + "0" * 25, "25 characters"),
            ("job_" + "0" * 27, "27 characters"),
            ("job_8" + "0" * 25, "above 7"),
            ("job_z" + "0" * 25, "above 7"),
            ("jb_" + "0" * 26, "'job_'"),
            ("0" * 30, "'job_'"),
            ("", "'job_'"),
            ("job-" + "0" * 26, "'job_'"),
            ("\u212aob_" + "0" * 26, "'job_'"),  # Kelvin sign lowercases to ASCII 'k'
            ("job_" + "0" * 25 + "-", "'-'"),
            (" job_" + "0" * 26, "'job_'"),
            ("job_" + "0" * 25 + "\u0660", "Crockford"),
        ],
    )
    def test_rejects(self, text: str, needle: str) -> None:
        with pytest.raises(InvalidJobRefError) as info:
            JobRef.parse(text)
        assert needle in info.value.problem
        assert "26 Crockford base32" in info.value.rule

    def test_rejects_non_str(self) -> None:
        with pytest.raises(InvalidJobRefError):
            JobRef.parse(123)  # type: ignore[arg-type]
        with pytest.raises(InvalidJobRefError):
            JobRef.coerce(UUID(int=1))  # type: ignore[arg-type]
        with pytest.raises(InvalidJobRefError):
            JobRef("job_" + "0" * 26)  # type: ignore[arg-type]


class TestJobRefValue:
    def test_new_carries_time(self) -> None:
        ref = JobRef.new(1_700_000_000_123)
        assert ref.created_at_ms == 1_700_000_000_123
        assert ref.uuid.version == 7

    def test_new_is_unique(self) -> None:
        refs = {JobRef.new(42) for _ in range(1000)}
        assert len(refs) == 1000

    def test_many_are_version_7_at_the_time_unique_and_carry_their_text(self) -> None:
        made = JobRef.many(1_700_000_000_123, 2000)
        assert len(made) == 2000 and len({ref for ref, _ in made}) == 2000
        for ref, text in made:
            assert ref.uuid.version == 7 and ref.uuid.variant == "specified in RFC 4122"
            assert ref.created_at_ms == 1_700_000_000_123
            assert text == str(ref) and JobRef.parse(text) == ref

    def test_many_validates_the_millisecond(self) -> None:
        with pytest.raises(ValidationError, match="ms"):
            JobRef.many(-1, 3)
        assert JobRef.many(5, 0) == []

    def test_coerce_passes_refs_through(self) -> None:
        ref = JobRef.new(1)
        assert JobRef.coerce(ref) is ref

    def test_hash_and_eq(self) -> None:
        a = JobRef(UUID(int=99))
        b = JobRef.parse(str(a))
        assert a == b
        assert hash(a) == hash(b)
        assert len({a, b}) == 1

    def test_frozen(self) -> None:
        ref = JobRef.new(1)
        with pytest.raises(AttributeError):
            ref.uuid = UUID(int=0)  # type: ignore[misc]

    def test_sorting(self) -> None:
        refs = [JobRef.new(ms) for ms in (30, 10, 20)]
        assert [r.created_at_ms for r in sorted(refs)] == [10, 20, 30]


class TestIncarnation:
    def test_shape(self) -> None:
        value = new_incarnation("worker-1.example", 4321)
        assert re.fullmatch(r"worker-1\.example:4321:[0-9a-f]{12}", value)

    def test_never_repeats(self) -> None:
        assert len({new_incarnation("h", 1) for _ in range(1000)}) == 1000

    def test_host_is_cleaned_and_cut(self) -> None:
        value = new_incarnation("é\tb" + "x" * 200, 7)
        host, pid, tail = value.rsplit(":", 2)
        assert host == "??b" + "x" * 97
        assert len(host) == 100
        assert pid == "7"
        assert len(tail) == 12

    @given(st.text(max_size=300), st.integers(min_value=0, max_value=2**31))
    def test_always_printable_ascii(self, host: str, pid: int) -> None:
        value = new_incarnation(host, pid)
        assert all(" " <= ch <= "~" for ch in value)
        assert value.endswith(f":{pid}:" + value[-12:])

    @pytest.mark.parametrize(("host", "pid"), [("h", -1), ("h", True), (None, 1), ("h", "1")])
    def test_bad_arguments(self, host: object, pid: object) -> None:
        with pytest.raises(ValidationError):
            new_incarnation(host, pid)  # type: ignore[arg-type]
