"""For tests that stage a SQLite outage: wait until the worker logs that it keeps retrying a
write, and read a job's status through a connection of the test's own."""

from __future__ import annotations

import logging
import sqlite3
import threading
from pathlib import Path


class Seen(logging.Handler):
    """Sets ``event`` when a record containing ``needle`` is logged."""

    def __init__(self, needle: str) -> None:
        super().__init__()
        self.needle = needle
        self.event = threading.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if self.needle in record.getMessage():
            self.event.set()


def job_status(path: Path, ref: object) -> str:
    """The job's status as ``acta_jobs_view`` names it."""
    with sqlite3.connect(path) as conn:
        (status,) = conn.execute(
            "SELECT status FROM acta_jobs_view WHERE job_ref = ?", (str(ref),)
        ).fetchone()
    return str(status)
