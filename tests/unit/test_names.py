"""Name and key rules shared by every provider."""

from __future__ import annotations

import re
import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from acta.errors import InvalidNameError, ValidationError
from acta.names import (
    validate_job_name,
    validate_key,
    validate_namespace,
    validate_schema_name,
    validate_tags,
)


class TestJobName:
    @pytest.mark.parametrize(
        "name",
        [
            "a",
            "send-email",
            "billing.charge-card",
            "a1.b2-c3.d",
            "v2-import",
            "x" * 100,
            "system.cleanup",
            "sysx.cleanup",
            "sys",
        ],
    )
    def test_accepts(self, name: str) -> None:
        assert validate_job_name(name) == name

    @pytest.mark.parametrize(
        ("name", "needle"),
        [
            ("", "empty"),
            ("x" * 101, "101 characters"),
            ("Send-Email", "kebab"),
            ("send_email", "kebab"),
            ("send--email", "kebab"),
            ("send-email-", "kebab"),
            ("-send", "kebab"),
            ("1send", "kebab"),
            ("a.1b", "kebab"),
            ("a..b", "kebab"),
            (".a", "kebab"),
            ("a.", "kebab"),
            ("a b", "kebab"),
            ("a\n", "kebab"),
            ("émail", "kebab"),
            ("sys.cleanup", "reserved"),
            ("sys.a.b", "reserved"),
        ],
    )
    def test_rejects(self, name: str, needle: str) -> None:
        with pytest.raises(InvalidNameError) as info:
            validate_job_name(name)
        assert info.value.field == "job name"
        assert needle in info.value.problem
        assert info.value.rule

    def test_system_names_when_allowed(self) -> None:
        assert validate_job_name("sys.cleanup", allow_system=True) == "sys.cleanup"

    def test_bad_value_is_quoted_and_truncated(self) -> None:
        with pytest.raises(InvalidNameError) as info:
            validate_job_name("Q" * 90)
        shown = info.value.problem.split(" is ")[0]
        assert shown.startswith("'QQQ")
        assert len(shown) <= 80

    def test_rejects_non_str(self) -> None:
        with pytest.raises(InvalidNameError):
            validate_job_name(None)  # type: ignore[arg-type]

    @given(
        st.from_regex(
            r"[a-z][a-z0-9]{0,5}(-[a-z0-9]{1,4}){0,2}(\.[a-z][a-z0-9]{0,5}){0,3}", fullmatch=True
        )
    )
    def test_generated_names(self, name: str) -> None:
        if name.startswith("sys."):
            with pytest.raises(InvalidNameError):
                validate_job_name(name)
        else:
            assert validate_job_name(name) == name


class TestNamespace:
    @pytest.mark.parametrize("name", ["default", "eu-west", "a", "t1", "x" * 63])
    def test_accepts(self, name: str) -> None:
        assert validate_namespace(name) == name

    @pytest.mark.parametrize(
        "name", ["", "x" * 64, "a.b", "A", "a_b", "a--b", "-a", "a-", "1a", " a", "ä"]
    )
    def test_rejects(self, name: str) -> None:
        with pytest.raises(InvalidNameError) as info:
            validate_namespace(name)
        assert info.value.field == "namespace"
        assert "kebab-case" in info.value.rule


class TestSchemaName:
    @pytest.mark.parametrize("name", ["acta", "_acta", "acta_v2", "public", "a" * 63, "pg"])
    def test_accepts(self, name: str) -> None:
        assert validate_schema_name(name) == name

    @pytest.mark.parametrize(
        ("name", "needle"),
        [
            ("", "identifier"),
            ("a" * 64, "identifier"),
            ("1acta", "identifier"),
            ("Acta", "identifier"),
            ("acta-jobs", "identifier"),
            ("acta\n", "identifier"),
            ("pg_catalog", "reserved"),
            ("pg_acta", "reserved"),
            ("information_schema", "reserved"),
        ],
    )
    def test_rejects(self, name: str, needle: str) -> None:
        with pytest.raises(InvalidNameError) as info:
            validate_schema_name(name)
        assert info.value.field == "schema"
        assert needle in info.value.problem


class TestKey:
    @pytest.mark.parametrize(
        "value",
        ["order-42", "a", "user:42/invoice 7", "café", "日本語", "emoji 🎉", "x" * 200],
    )
    def test_accepts(self, value: str) -> None:
        assert validate_key(value, field="dedupe key") == value

    @pytest.mark.parametrize(
        ("value", "needle"),
        [
            ("", "empty"),
            ("x" * 201, "201 characters"),
            ("a\x00b", "control"),
            ("a\nb", "control"),
            ("tab\t", "control"),
            ("a\x7fb", "control"),
            ("a\u200bb", "format"),  # zero-width space
            ("a\u202eb", "format"),  # right-to-left override
            ("\ufeffa", "format"),  # byte order mark
            ("a\ud800b", "surrogate"),
            (" a", "whitespace"),
            ("a ", "whitespace"),
            ("\u00a0a", "whitespace"),
            ("a\u3000", "whitespace"),
            ("cafe\u0301", "NFC"),
            ("\u212b", "NFC"),  # Angstrom sign normalizes to U+00C5
        ],
    )
    def test_rejects(self, value: str, needle: str) -> None:
        with pytest.raises(InvalidNameError) as info:
            validate_key(value, field="dedupe key")
        assert info.value.field == "dedupe key"
        assert needle in info.value.problem
        assert "NFC" in info.value.rule

    def test_nfc_advice(self) -> None:
        with pytest.raises(InvalidNameError) as info:
            validate_key("cafe\u0301", field="k")
        assert "normalize to NFC" in info.value.problem

    def test_position_is_reported(self) -> None:
        with pytest.raises(InvalidNameError) as info:
            validate_key("abc\x01", field="k")
        assert "U+0001" in info.value.problem
        assert "index 3" in info.value.problem

    def test_custom_max_length(self) -> None:
        assert validate_key("abcd", field="lane", max_length=4) == "abcd"
        with pytest.raises(InvalidNameError) as info:
            validate_key("abcde", field="lane", max_length=4)
        assert "at most 4" in info.value.rule

    @pytest.mark.parametrize("max_length", [0, -1, True, 2.5])
    def test_bad_max_length(self, max_length: object) -> None:
        with pytest.raises(ValidationError):
            validate_key("a", field="k", max_length=max_length)  # type: ignore[arg-type]

    @pytest.mark.parametrize("value", [None, 42, b"key", ["a"]])
    def test_rejects_non_str(self, value: object) -> None:
        with pytest.raises(InvalidNameError) as info:
            validate_key(value, field="k")  # type: ignore[arg-type]
        assert type(value).__name__ in info.value.problem

    @given(st.text(max_size=250))
    def test_round_trips_or_raises(self, value: str) -> None:
        try:
            result = validate_key(value, field="k")
        except ValidationError:
            return
        assert result is value

    @given(st.text(max_size=250))
    def test_accepted_keys_meet_every_rule(self, value: str) -> None:
        try:
            validate_key(value, field="k")
        except ValidationError:
            return
        assert 0 < len(value) <= 200
        assert unicodedata.normalize("NFC", value) == value
        assert value == value.strip()
        assert not any(unicodedata.category(ch) in {"Cc", "Cf", "Cs"} for ch in value)
        value.encode("utf-8")  # no lone surrogates, so this never raises

    @given(
        st.text(
            alphabet=st.characters(exclude_categories=["Cc", "Cf", "Cs", "Zs", "Zl", "Zp"]),
            min_size=1,
            max_size=50,
        )
    )
    def test_clean_nfc_text_is_accepted(self, raw: str) -> None:
        value = unicodedata.normalize("NFC", raw)
        if len(value) > 200 or value != value.strip():
            return
        assert validate_key(value, field="k") == value


class TestTags:
    def test_dedupes_in_order(self) -> None:
        assert validate_tags(["b", "a", "b", "c", "a"]) == ("b", "a", "c")

    def test_accepts_any_iterable(self) -> None:
        assert validate_tags(t for t in ("x", "y")) == ("x", "y")
        assert validate_tags(()) == ()

    @pytest.mark.parametrize("tags", ["billing", b"billing"])
    def test_rejects_single_string(self, tags: object) -> None:
        with pytest.raises(InvalidNameError) as info:
            validate_tags(tags)  # type: ignore[arg-type]
        assert info.value.field == "tags"
        assert "list or tuple" in info.value.rule

    def test_rejects_non_iterable(self) -> None:
        with pytest.raises(InvalidNameError):
            validate_tags(5)  # type: ignore[arg-type]

    def test_names_the_bad_index(self) -> None:
        with pytest.raises(InvalidNameError) as info:
            validate_tags(["ok", "fine", " bad"])
        assert info.value.field == "tags[2]"

    def test_tag_length(self) -> None:
        assert validate_tags(["x" * 64]) == ("x" * 64,)
        with pytest.raises(InvalidNameError) as info:
            validate_tags(["x" * 65])
        assert info.value.field == "tags[0]"

    def test_count_limit(self) -> None:
        tags = [f"t{i}" for i in range(32)]
        assert validate_tags(tags) == tuple(tags)
        assert validate_tags([*tags, "t0", "t5"]) == tuple(tags)
        with pytest.raises(InvalidNameError) as info:
            validate_tags([*tags, "t32"])
        assert "33" in info.value.problem
        assert re.search(r"\b32\b", info.value.rule)

    @given(st.lists(st.sampled_from(["a", "b", "c", "d"]), max_size=40))
    def test_dedupe_property(self, tags: list[str]) -> None:
        result = validate_tags(tags)
        assert len(set(result)) == len(result)
        assert set(result) == set(tags)
        assert list(result) == sorted(set(tags), key=tags.index)
