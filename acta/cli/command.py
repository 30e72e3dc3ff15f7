"""What an ``acta`` command is: its body's signature, its exit codes, the errors it raises on
purpose, and the argument types the commands share.

Every command registers a body (``Command``) under ``HANDLER`` on its leaf parser; ``acta.cli.main``
finds it there, runs it, and turns a ``CliError`` into ``error: <message>`` and the exit code
the error carries.
"""

from __future__ import annotations

import argparse
import getpass
import json
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from acta.app import Acta
from acta.codec import MAX_DEPTH
from acta.duration import parse_duration
from acta.errors import ValidationError

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

Command = Callable[[argparse.Namespace, Acta | None], int]
"""A command body: parsed arguments and the host's app (or None) in, exit code out."""

HANDLER = "acta_command"
"""The Namespace attribute under which each leaf parser stores its command body."""


class CliError(Exception):
    """A failure the CLI reports as ``error: <message>`` and turns into an exit code."""

    code = EXIT_FAILURE

    def __init__(self, message: str, code: int | None = None) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code


class UsageError(CliError):
    """The command line asked for something that cannot work (exit 2)."""

    code = EXIT_USAGE


# -- argument types ------------------------------------------------------------------------


def duration(text: str) -> timedelta:
    """argparse type for a positive duration such as ``45s``, ``1m30s`` or ``0.5``."""
    try:
        return parse_duration(text, field="duration")
    except ValidationError as exc:
        # argparse then prints usage and exits 2, like any other malformed option.
        raise argparse.ArgumentTypeError(str(exc)) from None


def grace(text: str) -> timedelta:
    """argparse type for a duration that may be zero (``--shutdown-grace 0``)."""
    try:
        return parse_duration(text, field="duration", allow_zero=True)
    except ValidationError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def json_argument(text: str, option: str, *, strict: bool = False, hint: str = "") -> Any:
    """A JSON value given on the command line, or a UsageError naming ``option``: text that is
    not JSON, nesting deeper than the parser can follow (a RecursionError, never a traceback),
    and with ``strict`` the NaN and Infinity constants that strict JSON has not."""

    def refuse_constant(constant: str) -> Any:
        raise ValueError(f"{constant} is not JSON")

    try:
        return json.loads(text, parse_constant=refuse_constant if strict else None)
    except ValueError as exc:
        raise UsageError(f"{option}: not JSON ({exc}){hint}") from None
    except RecursionError:
        raise UsageError(
            f"{option}: nested too deeply to read (acta stores at most {MAX_DEPTH} levels)"
        ) from None


def cli_actor(given: str | None) -> str:
    """Who an operator verb records: ``--actor`` when given, else ``cli:<login name>``."""
    if given:
        return given
    try:
        return f"cli:{getpass.getuser()}"
    except (OSError, KeyError):  # no login name in this environment (a container)
        return "cli:unknown"
