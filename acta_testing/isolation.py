"""Isolation by default: under the plugin, no test reaches the database an application names.

An application a test imports (made before the test began: ``myproject.jobs.app``) is bound to
the test's own ledger (the ``acta_provider`` fixture) the first time the test uses it, whichever
fixture the test asked for, as pytest-django swaps in its test database; the binding ends with
the test. An application the test makes itself (in its body or its fixtures) keeps the database
it names: the test chose it. The default ``acta_app`` is bound likewise. Used outside a test (at
import, during collection) such an application cannot be bound: that is an error naming the
fixture to override, and nothing is written.

acta itself calls in through ``acta.app.isolate``; this module never imports acta before a test
does (``sys.modules`` tells whether it did), so sessions that never use acta pay nothing.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Generator
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from acta.app import Acta

OVERRIDE = "acta_app"
SCHEDULES_MARK = "acta_schedules"
HOSTS = pytest.StashKey[list[Any]]()  # the hosts a test's fixtures made, by the test's item
_sessions: list[Isolation] = []  # the configured sessions, innermost last (pytester nests them)


def current() -> Isolation | None:
    """The innermost session's isolation: acta.app installs it when imported after the plugin."""
    return _sessions[-1] if _sessions else None


class IsolationWarning(UserWarning):
    """An application was bound to the test's ledger, but the test host runs another one."""


class Isolation:
    """The plugin object (one per session) that binds imported applications per test."""

    def __init__(self) -> None:
        self.item: pytest.Item | None = None
        self.mark = 0
        self.adopted: set[int] = set()  # ids of apps the plugin made (the default acta_app)
        self.bindings: list[AbstractContextManager[Any]] = []
        self.previous: Any = None
        self.installed = False
        _sessions.append(self)
        module = sys.modules.get("acta.app")
        if module is not None:  # acta came first; otherwise acta.app asks current() itself
            self.previous = module.isolate(self)
            self.installed = True

    # -- the hook acta calls ----------------------------------------------------------------

    def __call__(self, app: Acta) -> None:
        item = self.item
        if item is None:
            raise _error(app, "outside a test (at import time, during collection or teardown)")
        if app.serial > self.mark and id(app) not in self.adopted:
            return  # the test made this application itself and named its database
        request: pytest.FixtureRequest = item._request  # type: ignore[attr-defined]
        try:
            provider = request.getfixturevalue("acta_provider")
            clock = request.getfixturevalue("acta_clock") if _uses_clock(item) else None
        except pytest.skip.Exception:
            raise
        except Exception as exc:
            raise _error(app, f"binding it to the test's ledger failed ({exc})") from exc
        binding = app.bound(provider, clock)
        binding.__enter__()
        self.bindings.append(binding)
        _warn_if_not_hosted(item, app)

    def adopt(self, app: Acta) -> None:
        """Bind ``app`` like an imported application although the plugin just made it."""
        self.adopted.add(id(app))

    # -- pytest hooks -----------------------------------------------------------------------

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> Generator[None, None, None]:
        module = sys.modules.get("acta.app")
        if module is not None:
            self.mark = module.next_serial()
        self.item = item
        return (yield)

    @pytest.hookimpl(wrapper=True, trylast=True)
    def pytest_runtest_teardown(self, item: pytest.Item) -> Generator[None, None, None]:
        try:
            return (yield)
        finally:
            self.release()

    def release(self) -> None:
        """End this test's bindings (last made, first undone)."""
        self.item = None
        self.adopted.clear()
        while self.bindings:
            self.bindings.pop().__exit__(None, None, None)

    def pytest_unconfigure(self) -> None:
        self.release()
        if self in _sessions:
            _sessions.remove(self)
        module = sys.modules.get("acta.app")
        if module is not None:
            # A nested session (pytester) gives the outer one back; one that acta.app found
            # by itself (imported after the plugin) gives back the session around it, if any.
            module.isolate(self.previous if self.installed else current())


def _uses_clock(item: pytest.Item) -> bool:
    """Whether the test runs on the manual clock (it asked for it, or for a host)."""
    names = getattr(item, "fixturenames", ())
    return any(n in names for n in ("acta_clock", "acta_host", "acta_async_host"))


def _warn_if_not_hosted(item: pytest.Item, app: Acta) -> None:
    """An imported application with handlers, bound while the test's host runs another one:
    its jobs land in the test's ledger but the host has no handler for them."""
    hosts = item.stash.get(HOSTS, [])
    if hosts and all(h.app is not app for h in hosts) and app.definitions:
        warnings.warn(
            IsolationWarning(
                f"the application at {app.where} was bound to this test's ledger, but the test "
                f"host runs another one (the `{OVERRIDE}` fixture's): the host cannot run its "
                f"jobs; override the `{OVERRIDE}` fixture to return it"
            ),
            stacklevel=4,
        )


def _error(app: Acta, why: str) -> Exception:
    from acta.errors import ConfigurationError

    return ConfigurationError(
        f"acta's pytest plugin keeps tests off the database an application names "
        f"({app.where}); this application was used {why}, so it could not be bound to a test "
        f"ledger. Use it inside a test, and override the `{OVERRIDE}` fixture to return it so "
        f"the test host runs it"
    )


def marked_for_schedules() -> bool:
    """Whether the test running now is marked ``acta_schedules`` (a host built by hand in it
    follows the mark as the fixtures' hosts do); False outside a pytest test."""
    session = current()
    item = session.item if session is not None else None
    return item is not None and item.get_closest_marker(SCHEDULES_MARK) is not None
