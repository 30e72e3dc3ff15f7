"""The gates' operator surface: read concurrency gates and rate meters, change their limits.

A change is a compare-and-set on the gate's version (read it from ``gates()`` or ``meters()``),
so two operators cannot silently overwrite each other, and it is recorded as a
``gate-changed`` event. It takes effect at the next admission on every worker. Sync and async
twins run the same verbs; arguments are checked before any statement runs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from acta.errors import ValidationError
from acta.ledger import override
from acta.ledger.control import check_actor, check_reason
from acta.ledger.events import Who
from acta.ledger.facade import Ledger
from acta.model.codes import GateKind
from acta.model.rows import DefinitionSpec, GateInfo, MeterInfo
from acta.names import validate_job_name, validate_key
from acta.policy.gate import Rate, validate_concurrency_limit
from acta.policy.job import KEY_MAX
from acta.provider.verb import Verb
from acta.registry import Registry

T = TypeVar("T")


class Overrides:
    """Gate reads and overrides for one namespace of the ledger ``ledger()`` returns."""

    namespace: str
    _read_ledger: Callable[[], Ledger]
    _registry: Registry

    def _specs(self) -> list[DefinitionSpec]:
        """This application's definitions, as the ledger stores them."""
        return [d.spec() for d in self._registry.definitions.values()]

    def _run(self, make: Callable[[], Verb[T]]) -> T:
        return self._read_ledger().run(make, name="read")

    async def _run_async(self, make: Callable[[], Verb[T]]) -> T:
        return await self._read_ledger().run_async(make, name="read")

    def _change(self, make: Callable[[], Verb[T]]) -> T:
        return self._read_ledger().run(make, name="override")

    async def _change_async(self, make: Callable[[], Verb[T]]) -> T:
        return await self._read_ledger().run_async(make, name="override")

    def gates(self) -> list[GateInfo]:
        """Every concurrency gate of the namespace: limit in force, holders, version."""
        ns = self.namespace
        return self._run(lambda: override.gates(ns))

    async def gates_async(self) -> list[GateInfo]:
        ns = self.namespace
        return await self._run_async(lambda: override.gates(ns))

    def meters(self) -> list[MeterInfo]:
        """Every rate meter of the namespace: rate in force, next free turn, version."""
        ns = self.namespace
        return self._run(lambda: override.meters(ns))

    async def meters_async(self) -> list[MeterInfo]:
        ns = self.namespace
        return await self._run_async(lambda: override.meters(ns))

    def set_concurrency_limit(
        self,
        *,
        key: str | None = None,
        job: str | None = None,
        limit: int | None,
        expected_version: int,
        reason: str = "changed by an operator",
        actor: str = "operator",
    ) -> int:
        """Override the limit of a concurrency key (``key=``) or of a definition's limit
        (``job=``); ``limit=None`` clears the override. Returns the gate's new version;
        ConflictError if ``expected_version`` is not the current one (0 for a gate nobody
        has used yet). ``reason`` and ``actor`` are recorded on the gate-changed event."""
        args, who = self._limit_args(key, job, limit, expected_version), _who(reason, actor)
        now = self._read_ledger().now()
        specs = self._specs()
        return self._change(lambda: override.set_limit(*args, now, specs, who))

    async def set_concurrency_limit_async(
        self,
        *,
        key: str | None = None,
        job: str | None = None,
        limit: int | None,
        expected_version: int,
        reason: str = "changed by an operator",
        actor: str = "operator",
    ) -> int:
        args, who = self._limit_args(key, job, limit, expected_version), _who(reason, actor)
        now = self._read_ledger().now()
        specs = self._specs()
        return await self._change_async(lambda: override.set_limit(*args, now, specs, who))

    def set_rate_limit(
        self,
        meter: str,
        rate: str | None,
        *,
        expected_version: int,
        reason: str = "changed by an operator",
        actor: str = "operator",
    ) -> int:
        """Override the rate of a meter (named by its rate_key, else by its definition), as
        ``"10/s"``; ``rate=None`` clears the override. Returns the meter's new version."""
        args, who = self._rate_args(meter, rate, expected_version), _who(reason, actor)
        now = self._read_ledger().now()
        specs = self._specs()
        return self._change(lambda: override.set_rate(*args, now, specs, who))

    async def set_rate_limit_async(
        self,
        meter: str,
        rate: str | None,
        *,
        expected_version: int,
        reason: str = "changed by an operator",
        actor: str = "operator",
    ) -> int:
        args, who = self._rate_args(meter, rate, expected_version), _who(reason, actor)
        now = self._read_ledger().now()
        specs = self._specs()
        return await self._change_async(lambda: override.set_rate(*args, now, specs, who))

    def _limit_args(
        self, key: str | None, job: str | None, limit: int | None, expected: int
    ) -> tuple[str, GateKind, str, int | None, int]:
        if (key is None) == (job is None):
            raise ValidationError(
                "key",
                "pass exactly one of key= and job=",
                "key= names a concurrency key, job= a definition declaring concurrency_limit",
            )
        if key is not None:
            kind, name = GateKind.KEY, validate_key(key, field="key", max_length=KEY_MAX)
        else:
            kind, name = GateKind.JOB, validate_job_name(str(job))
        checked = None if limit is None else validate_concurrency_limit(limit, "limit")
        return self.namespace, kind, name, checked, _version(expected)

    def _rate_args(
        self, meter: str, rate: str | None, expected: int
    ) -> tuple[str, str, Rate | None, int]:
        name = validate_key(meter, field="meter", max_length=KEY_MAX)
        parsed = None if rate is None else Rate.parse(rate, "rate")
        return self.namespace, name, parsed, _version(expected)


def _who(reason: str, actor: str) -> Who:
    return Who(actor=check_actor(actor), reason=check_reason(reason))


def _version(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValidationError(
            "expected_version", f"got {value!r}", "the version read from gates() or meters()"
        )
    return value
