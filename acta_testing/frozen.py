"""The test clock follows freezegun and time-machine while either is active.

``FrozenTime`` is the ``TimeSource`` (acta.clock) the plugin's ``acta_clock`` follows. While a
``freeze_time`` (freezegun) or a ``travel`` (time-machine) is active, the host's clock reads its
frozen instant, so handlers, ``ctx.now()`` and the ledger agree with the frozen system time;
``advance()`` moves the frozen time with the clock. Neither library is a dependency: each is
looked up in ``sys.modules`` (a test that freezes time has imported it), so nothing is imported
here and a session without them pays nothing.
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime, timedelta
from typing import Any


def _freezegun() -> Any:
    """The innermost active freezegun factory, or None."""
    api = sys.modules.get("freezegun.api")
    factories = getattr(api, "freeze_factories", None)
    return factories[-1] if factories else None


def _time_machine() -> Any:
    """The innermost active time-machine traveller, or None."""
    module = sys.modules.get("time_machine")
    stack = getattr(module, "traveller_stack", None)
    return stack[-1] if stack else None


class FrozenTime:
    """freezegun's or time-machine's frozen time, whichever is active (freezegun first)."""

    def frozen(self) -> datetime | None:
        factory = _freezegun()
        if factory is not None:
            instant: datetime = factory()  # naive UTC
            return instant.replace(tzinfo=UTC) if instant.tzinfo is None else instant
        traveller = _time_machine()
        if traveller is not None:
            ns = traveller.time_ns()
            return datetime.fromtimestamp(ns // 1000 / 1_000_000, UTC)
        return None

    def shift(self, delta: timedelta) -> None:
        factory = _freezegun()
        if factory is not None:
            factory.tick(delta)
            return
        traveller = _time_machine()
        if traveller is not None:
            traveller.shift(delta)

    def move_to(self, instant: datetime) -> None:
        factory = _freezegun()
        if factory is not None:
            factory.move_to(instant.astimezone(UTC).replace(tzinfo=None))
            return
        traveller = _time_machine()
        if traveller is not None:
            traveller.move_to(instant)
