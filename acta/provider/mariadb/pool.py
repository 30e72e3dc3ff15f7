"""A small thread-safe pool of PyMySQL connections with acta's session settings.

PyMySQL connections are not shared between threads; the pool hands one connection to one verb
at a time and takes it back afterwards. A connection that failed with a lost-connection error
is closed instead of returned. At most ``max_size`` connections exist; a caller beyond that
waits up to ``timeout`` seconds and then gets DatabaseUnavailableError.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any

from acta.provider.mariadb.connect import ISOLATION, Target


class Pool:
    def __init__(self, target: Target, max_size: int, connect_timeout: float, timeout: float):
        self.target = target
        self.max_size = max_size
        self.connect_timeout = connect_timeout
        self.timeout = timeout
        self._idle: list[Any] = []
        self._count = 0
        self._cond = threading.Condition()
        self._closed = False

    def connect(self) -> Any:
        """A new connection with acta's session settings (not counted by the pool)."""
        import pymysql

        try:
            conn = pymysql.connect(**self.target.connect_kwargs(self.connect_timeout))
        except pymysql.err.Error as exc:
            raise self.target.unavailable(exc) from None
        try:
            with conn.cursor() as cur:
                cur.execute(ISOLATION)
        except BaseException:
            conn.close()
            raise
        return conn

    def get(self) -> Any:
        with self._cond:
            while True:
                if self._idle:
                    return self._idle.pop()
                if self._count < self.max_size:
                    self._count += 1
                    break
                if not self._cond.wait(self.timeout):
                    raise self.target.unavailable(
                        TimeoutError(f"no free connection in {self.timeout:g} s"),
                        "get a connection to",
                    )
        try:
            return self.connect()
        except BaseException:
            with self._cond:
                self._count -= 1
                self._cond.notify()
            raise

    def put(self, conn: Any, broken: bool = False) -> None:
        with self._cond:
            if broken or self._closed or not conn.open:
                self._count -= 1
                _close(conn)
            else:
                self._idle.append(conn)
            self._cond.notify()

    def close(self) -> None:
        with self._cond:
            self._closed = True
            idle, self._idle = self._idle, []
            self._count -= len(idle)
        for conn in idle:
            _close(conn)


def _close(conn: Any) -> None:
    with contextlib.suppress(Exception):  # already gone: nothing to release
        conn.close()
