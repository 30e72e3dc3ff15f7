"""A verb's body, read and parsed within bounds: at most ``MAX_BODY`` bytes, and JSON nested
at most ``MAX_DEPTH`` levels, checked by a scan before the parser runs (Python's parser
recurses, so a body of a few thousand ``[`` would otherwise exhaust the stack).

A verb takes one object of text values (a form, or a JSON object), so nothing legitimate comes
near either bound; what passes the bounds but is not such an object is refused too.
"""

from __future__ import annotations

import json
from urllib.parse import parse_qsl

from starlette.requests import Request

from acta.dashboard.guard import MAX_BODY

MAX_DEPTH = 8
"""Levels of JSON nesting a verb body may have (a verb's own arguments need one)."""


class BodyError(Exception):
    """A verb body refused: ``status`` and a message for the caller."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


async def read(request: Request) -> bytes:
    """The body, refused with 413 as soon as it passes ``MAX_BODY`` (whatever the
    Content-Length said: a chunked body has none)."""
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_BODY:
            raise BodyError(413, f"The body is over {MAX_BODY} bytes.")
    return body


def nesting(text: str) -> int:
    """How deep the arrays and objects of a JSON text nest (brackets inside strings skipped)."""
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


def parse(body: bytes, form: bool) -> dict[str, str]:
    """The verb's arguments from a form or a JSON object, as text."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise BodyError(400, "The body is not UTF-8 text.") from None
    if form:
        return dict(parse_qsl(text))
    if nesting(text) > MAX_DEPTH:
        raise BodyError(
            400,
            f"The JSON body is nested deeper than {MAX_DEPTH} levels; a verb takes one "
            "object of text values.",
        )
    try:
        raw = json.loads(text or "{}")
    except (ValueError, RecursionError):
        raise BodyError(400, "The body is neither a form nor JSON.") from None
    if not isinstance(raw, dict):
        raise BodyError(400, "The JSON body must be an object.")
    return {str(k): str(v) for k, v in raw.items()}
