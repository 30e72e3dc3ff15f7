"""BlobRef: a reference that checks itself when made, and bytes checked against it."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from acta import BlobIntegrityError, BlobRef, ValidationError
from acta.blobref import checksum_of, checksum_of_file
from acta.shape import from_data, to_data

DATA = b"%PDF-1.7 a very small invoice"
DIGEST = hashlib.sha256(DATA).hexdigest()


def test_of_describes_the_bytes() -> None:
    ref = BlobRef.of(DATA, "s3://invoices/2026/42.pdf", "application/pdf")
    assert ref == BlobRef("s3://invoices/2026/42.pdf", f"sha256:{DIGEST}", 29, "application/pdf")
    assert ref.sha256 == DIGEST
    assert ref.verify(bytearray(DATA)) == DATA


def test_a_file_is_hashed_in_chunks_and_gets_its_file_uri(tmp_path: Path) -> None:
    path = tmp_path / "big.bin"
    data = bytes(range(256)) * 9000  # over two read chunks
    path.write_bytes(data)
    assert checksum_of_file(path) == (checksum_of(data), len(data))
    ref = BlobRef.of_file(path)
    assert ref.uri == path.resolve().as_uri() and ref.size == len(data)
    assert ref.verify_file(path) == path


def test_wrong_bytes_name_what_differs(tmp_path: Path) -> None:
    ref = BlobRef.of(DATA, "file:///store/a")
    with pytest.raises(BlobIntegrityError, match="size is 28, the reference says 29") as short:
        ref.verify(DATA[:-1])
    assert (short.value.field, short.value.uri) == ("size", "file:///store/a")
    tampered = DATA.replace(b"small", b"SMALL")
    with pytest.raises(BlobIntegrityError, match="checksum") as changed:
        ref.verify(tampered)
    assert changed.value.expected == ref.checksum and changed.value.found == checksum_of(tampered)
    path = tmp_path / "a"
    path.write_bytes(tampered)
    with pytest.raises(BlobIntegrityError, match="checksum"):
        ref.verify_file(path)
    path.write_bytes(DATA + b"!")
    with pytest.raises(BlobIntegrityError, match="size"):
        ref.verify_file(path)


@pytest.mark.parametrize(
    ("field", "changes"),
    [
        ("uri", {"uri": ""}),
        ("uri", {"uri": "no-scheme"}),
        ("uri", {"uri": "file:///a b"}),
        ("uri", {"uri": "file:///a\nb"}),
        ("uri", {"uri": "s3://b/" + "k" * 2050}),
        ("checksum", {"checksum": DIGEST}),
        ("checksum", {"checksum": "md5:" + "0" * 32}),
        ("checksum", {"checksum": "sha256:" + DIGEST.upper()}),
        ("size", {"size": -1}),
        ("size", {"size": True}),
        ("size", {"size": 2.0}),
        ("content_type", {"content_type": "pdf"}),
        ("content_type", {"content_type": "text/plain; charset"}),
    ],
)
def test_a_bad_reference_is_refused_when_made(field: str, changes: dict[str, object]) -> None:
    values: dict[str, object] = {
        "uri": "s3://b/k",
        "checksum": f"sha256:{DIGEST}",
        "size": 29,
        "content_type": "application/pdf",
    }
    values.update(changes)
    with pytest.raises(ValidationError) as refused:
        BlobRef(**values)  # type: ignore[arg-type]
    assert refused.value.field == field


def test_media_type_parameters_are_accepted() -> None:
    ref = BlobRef.of(b"hi", "https://cdn.example/a.txt", 'text/plain; charset="utf-8"')
    assert ref.content_type == 'text/plain; charset="utf-8"'


def test_it_is_a_job_payload_that_round_trips() -> None:
    ref = BlobRef.of(DATA, "file:///store/ab", "application/pdf")
    data = to_data(ref, BlobRef)
    assert data == {
        "uri": "file:///store/ab",
        "checksum": f"sha256:{DIGEST}",
        "size": 29,
        "content_type": "application/pdf",
    }
    assert from_data(data, BlobRef) == ref
