"""Payloads by reference: a typed pointer to bytes kept outside the ledger.

A job's input is capped (1 MiB by default) because it lives in a database row. A large artifact
(a PDF, a video, a model file) belongs in a blob store, and the job carries a ``BlobRef``: where
the bytes are (a URI), what they hash to, how many there are and what they are. The store and
the transfer stay the application's; this module only describes the bytes and checks that what
a handler fetched is what the producer referenced, so a truncated download or a replaced object
fails loudly instead of being processed.

``BlobRef`` is a frozen dataclass, so it is a job input or result like any other (stored as a
small JSON object) and it round-trips exactly. It imports nothing from acta but ``acta.errors``.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from acta.errors import BlobIntegrityError, ValidationError

__all__ = ["ALGORITHM", "BlobRef", "checksum_of", "checksum_of_file"]

ALGORITHM = "sha256"
"""The only checksum algorithm a reference carries today (written as ``sha256:<hex>``)."""

URI_MAX = 2048
_CHUNK = 1 << 20
_CHECKSUM = re.compile(r"sha256:[0-9a-f]{64}")
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:\S+")
# type "/" subtype, then optional "; parameter=value" pairs (RFC 9110 token characters).
_TOKEN = r"[!#$%&'*+.^_`|~0-9A-Za-z-]+"
_CONTENT_TYPE = re.compile(rf"{_TOKEN}/{_TOKEN}(\s*;\s*{_TOKEN}=(\"[^\"\\]*\"|{_TOKEN}))*")


def checksum_of(data: bytes | bytearray | memoryview) -> str:
    """The checksum a ``BlobRef`` carries for ``data``: ``sha256:`` and 64 hex digits."""
    return f"{ALGORITHM}:{hashlib.sha256(data).hexdigest()}"


def _digest_stream(stream: BinaryIO) -> tuple[str, int]:
    digest, size = hashlib.sha256(), 0
    while chunk := stream.read(_CHUNK):
        digest.update(chunk)
        size += len(chunk)
    return f"{ALGORITHM}:{digest.hexdigest()}", size


def checksum_of_file(path: str | Path) -> tuple[str, int]:
    """The checksum and size of a file, read in 1 MiB chunks (never whole into memory)."""
    with open(path, "rb") as stream:
        return _digest_stream(stream)


@dataclass(frozen=True, slots=True)
class BlobRef:
    """Where a large payload is and what it must be: URI, checksum, size, content type.

    Checked when made (here, at enqueue, or when a stored job is read back): ``uri`` has a
    scheme (``file:``, ``s3:``, ``https:``, ...) and at most 2048 characters without spaces or
    control characters; ``checksum`` is ``sha256:`` and 64 lowercase hex digits; ``size`` is a
    byte count; ``content_type`` is a media type such as ``application/pdf``.
    """

    uri: str
    checksum: str
    size: int
    content_type: str = "application/octet-stream"

    def __post_init__(self) -> None:
        if not isinstance(self.uri, str) or _SCHEME.fullmatch(self.uri) is None:
            raise ValidationError(
                "uri", f"{self.uri!r:.80} is not a URI", "scheme:rest, no spaces or controls"
            )
        if len(self.uri) > URI_MAX:
            raise ValidationError("uri", f"{len(self.uri)} characters", f"at most {URI_MAX}")
        if not isinstance(self.checksum, str) or _CHECKSUM.fullmatch(self.checksum) is None:
            raise ValidationError(
                "checksum",
                f"{self.checksum!r:.80} is not a checksum",
                "'sha256:' then 64 lowercase hex digits (see checksum_of)",
            )
        if isinstance(self.size, bool) or not isinstance(self.size, int) or self.size < 0:
            raise ValidationError("size", f"got {self.size!r}", "a byte count, an int >= 0")
        if (
            not isinstance(self.content_type, str)
            or _CONTENT_TYPE.fullmatch(self.content_type) is None
        ):
            raise ValidationError(
                "content_type",
                f"{self.content_type!r:.80} is not a media type",
                "type/subtype with optional ; parameters, such as 'application/pdf'",
            )

    @classmethod
    def of(
        cls,
        data: bytes | bytearray | memoryview,
        uri: str,
        content_type: str = "application/octet-stream",
    ) -> BlobRef:
        """The reference for ``data`` about to be stored at ``uri``."""
        return cls(uri, checksum_of(data), len(data), content_type)

    @classmethod
    def of_file(
        cls,
        path: str | Path,
        uri: str | None = None,
        content_type: str = "application/octet-stream",
    ) -> BlobRef:
        """The reference for a file, read in chunks; ``uri`` defaults to its ``file:`` URI."""
        checksum, size = checksum_of_file(path)
        return cls(uri or Path(path).resolve().as_uri(), checksum, size, content_type)

    @property
    def sha256(self) -> str:
        """The hex digest alone, as many stores (S3's ``x-amz-checksum``, say) want it."""
        return self.checksum.split(":", 1)[1]

    def verify(self, data: bytes | bytearray | memoryview) -> bytes:
        """Return ``data`` as bytes if it is what this reference describes, else raise
        ``BlobIntegrityError`` naming what differs (the size first: it is the cheap check)."""
        if len(data) != self.size:
            raise BlobIntegrityError(self.uri, "size", self.size, len(data))
        found = checksum_of(data)
        if found != self.checksum:
            raise BlobIntegrityError(self.uri, "checksum", self.checksum, found)
        return bytes(data)

    def verify_file(self, path: str | Path) -> Path:
        """Check a downloaded or local file against this reference, reading it in chunks;
        return its path, or raise ``BlobIntegrityError``."""
        found, size = checksum_of_file(path)
        if size != self.size:
            raise BlobIntegrityError(self.uri, "size", self.size, size)
        if found != self.checksum:
            raise BlobIntegrityError(self.uri, "checksum", self.checksum, found)
        return Path(path)
