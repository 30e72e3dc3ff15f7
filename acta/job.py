"""Job definitions: the durable name, the typed input and result, and the policy.

``@app.job("send-email", max_attempts=5, backoff="1m..8h x2 ±10%")`` turns a handler into a
``JobDefinition``. Everything is validated here, at import time, so a bad name, policy or input
annotation fails before the first job is ever enqueued. The handler's signature decides what it
receives: the input (first parameter), and the ``JobContext`` (a parameter annotated with it or
named ``ctx``/``context``).
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from acta.backoff import DEFAULT_BACKOFF, Backoff
from acta.codec import Codec
from acta.context import JobContext
from acta.duration import format_duration, parse_duration
from acta.errors import ConfigurationError, InvalidPolicyError, ValidationError
from acta.model.codes import AuditLevel
from acta.model.rows import DefinitionSpec
from acta.names import validate_job_name
from acta.shape import check_supported, codec_for

if TYPE_CHECKING:
    from acta.app import Acta
    from acta.ids import JobRef
    from acta.request import JobRequest

I = TypeVar("I")  # noqa: E741 - the conventional name for an input type variable
R = TypeVar("R")

DEFAULT_MAX_ATTEMPTS = 15
MAX_ATTEMPTS_LIMIT = 1000
PRIORITY_RANGE = range(-100, 101)
_AUDIT_NAMES = {level.label: level for level in AuditLevel}


@dataclass(frozen=True, slots=True)
class JobPolicy:
    """How a definition's jobs are retried, timed out, ordered and audited."""

    max_attempts: int = DEFAULT_MAX_ATTEMPTS
    backoff: Backoff = DEFAULT_BACKOFF
    timeout: timedelta | None = None
    priority: int = 0
    audit: AuditLevel = AuditLevel.FULL

    @classmethod
    def build(
        cls,
        *,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        backoff: str | Backoff = DEFAULT_BACKOFF,
        timeout: str | float | timedelta | None = None,
        priority: int = 0,
        audit: str | AuditLevel = AuditLevel.FULL,
    ) -> JobPolicy:
        """Validate user-facing policy arguments into a JobPolicy."""
        if isinstance(max_attempts, bool) or not isinstance(max_attempts, int):
            raise InvalidPolicyError(
                "max_attempts", f"got {max_attempts!r}", "an int from 1 to 1000"
            )
        if not 1 <= max_attempts <= MAX_ATTEMPTS_LIMIT:
            raise InvalidPolicyError("max_attempts", f"got {max_attempts}", "an int from 1 to 1000")
        parsed_backoff = backoff if isinstance(backoff, Backoff) else Backoff.parse(backoff)
        parsed_timeout = None if timeout is None else _timeout(timeout)
        return cls(
            max_attempts=max_attempts,
            backoff=parsed_backoff,
            timeout=parsed_timeout,
            priority=validate_priority(priority),
            audit=_audit(audit),
        )


def validate_priority(priority: object, field: str = "priority") -> int:
    """Priorities are ints from -100 to 100; higher runs first."""
    if (
        isinstance(priority, bool)
        or not isinstance(priority, int)
        or priority not in PRIORITY_RANGE
    ):
        raise InvalidPolicyError(
            field, f"got {priority!r}", "an int from -100 to 100, higher first"
        )
    return priority


def _timeout(value: str | float | timedelta) -> timedelta:
    try:
        return parse_duration(value, field="timeout")
    except ValidationError as exc:  # a policy error, like every other policy argument
        raise InvalidPolicyError(exc.field, exc.problem, exc.rule) from None


def _audit(value: str | AuditLevel) -> AuditLevel:
    if isinstance(value, AuditLevel):
        return value
    level = _AUDIT_NAMES.get(value) if isinstance(value, str) else None
    if level is None:
        raise InvalidPolicyError("audit", f"got {value!r}", "one of 'full', 'failures', 'off'")
    return level


class JobDefinition(Generic[I, R]):
    """A declared job: name, types, policy and (in workers) its handler."""

    def __init__(
        self,
        app: Acta,
        name: str,
        handler: Callable[..., R | Awaitable[R]] | None,
        policy: JobPolicy,
        *,
        input_type: Any = None,
        result_type: Any = None,
        system: bool = False,
    ) -> None:
        self.app = app
        self.name = validate_job_name(name, allow_system=system)
        self.handler = handler
        self.policy = policy
        self.system = system
        self.is_async = handler is not None and inspect.iscoroutinefunction(handler)
        self.context_param: str | None = None
        self._spec: DefinitionSpec | None = None
        self.takes_input = True
        if handler is not None:
            self._read_signature(handler, input_type, result_type)
        else:
            self.input_type = input_type
            self.result_type = result_type
        check_supported(self.input_type, "input")
        if self.result_type is not None:
            check_supported(self.result_type, "result")
        self.input_codec: Codec = codec_for(self.input_type)
        self.result_codec: Codec = codec_for(self.result_type)

    def _read_signature(
        self, handler: Callable[..., Any], input_type: Any, result_type: Any
    ) -> None:
        try:
            hints = typing.get_type_hints(handler)
        except Exception as exc:  # unresolved forward references and the like
            raise ConfigurationError(
                f"job {self.name!r}: cannot read handler annotations: {exc}"
            ) from exc
        params = list(inspect.signature(handler).parameters.values())
        inputs: list[inspect.Parameter] = []
        for p in params:
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                raise ConfigurationError(
                    f"job {self.name!r}: *args/**kwargs handlers are not supported"
                )
            if hints.get(p.name) is JobContext or (
                p.name in ("ctx", "context") and p.name not in hints
            ):
                self.context_param = p.name
            else:
                inputs.append(p)
        if len(inputs) > 1:
            names = ", ".join(p.name for p in inputs)
            raise ConfigurationError(
                f"job {self.name!r}: the handler takes one input and optionally a JobContext; "
                f"found parameters {names}"
            )
        self.takes_input = bool(inputs)
        if input_type is None and inputs:
            input_type = hints.get(inputs[0].name, Any)
        self.input_type = input_type
        returned = hints.get("return", None)
        if result_type is None and returned not in (None, type(None)):
            result_type = returned
        self.result_type = result_type
        self._input_param = inputs[0] if inputs else None

    # -- producing ------------------------------------------------------------------------

    def spec(self) -> DefinitionSpec:
        """The definition as the ledger stores it (computed once: policy is immutable)."""
        if self._spec is None:
            self._spec = self._build_spec()
        return self._spec

    def _build_spec(self) -> DefinitionSpec:
        timeout = self.policy.timeout
        return DefinitionSpec(
            name=self.name,
            max_attempts=self.policy.max_attempts,
            backoff=str(self.policy.backoff),
            timeout_ms=None if timeout is None else max(1, timeout // timedelta(milliseconds=1)),
            priority=self.policy.priority,
            audit_level=self.policy.audit,
        )

    def request(self, input: I | None = None, **options: Any) -> JobRequest:
        """Describe one enqueue of this job (for ``enqueue_batch``); validates now."""
        from acta.request import JobRequest

        return JobRequest.build(self, input, **options)

    def enqueue(self, input: I | None = None, **options: Any) -> JobRef:
        """Enqueue one job of this definition (sync). Options as ``Acta.enqueue``."""
        return self.app.enqueue(self, input, **options)

    async def enqueue_async(self, input: I | None = None, **options: Any) -> JobRef:
        """Enqueue one job of this definition (async)."""
        return await self.app.enqueue_async(self, input, **options)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the handler directly, as plain Python (no ledger involved)."""
        if self.handler is None:
            raise ConfigurationError(f"job {self.name!r} was declared without a handler")
        return self.handler(*args, **kwargs)

    def __repr__(self) -> str:
        timeout = "none" if self.policy.timeout is None else format_duration(self.policy.timeout)
        return (
            f"<JobDefinition {self.name!r} attempts={self.policy.max_attempts} "
            f"backoff='{self.policy.backoff}' timeout={timeout}>"
        )
