"""Job definitions: the durable name, the typed input and result, the policy, and one
validated enqueue of them (``JobRequest``).

``@app.job("send-email", max_attempts=5, backoff="1m..8h x2 ±10%")`` turns a handler into a
``JobDefinition``. Everything is validated here, at import time, so a bad name, policy or input
annotation fails before the first job is ever enqueued. The handler's signature decides what it
receives: the input (first parameter), and the ``JobContext`` (a parameter annotated with it or
named ``ctx``/``context``).

A definition knows no application. The registry it is added to becomes its ``owner`` and
supplies what its enqueue shortcuts need (the payload cap and the producer), through the
``DefinitionOwner`` protocol.
"""

from __future__ import annotations

import functools
import inspect
import json
import operator
import types
import typing
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Generic, Protocol, TypeVar, Unpack

from acta.codec import DEFAULT_PAYLOAD_CAP, Codec, check_size, codecs, encode_value
from acta.context import JobContext
from acta.contract import Contract, contract_of, fingerprint
from acta.duration import format_duration, parse_duration
from acta.errors import (
    ConfigurationError,
    InvalidPolicyError,
    TenantScopeError,
    ValidationError,
)
from acta.ids import JobRef
from acta.instant import check_instant
from acta.model.rows import DefinitionSpec
from acta.names import validate_job_name, validate_key, validate_tags
from acta.options import ENQUEUE_OPTIONS, EnqueueOptions, check_options
from acta.outcome import Directive
from acta.policy.gate import JobGates, gates_for
from acta.policy.job import KEY_MAX, JobPolicy, validate_priority
from acta.shape import check_supported, codec_for, to_data
from acta.sync_context import SyncJobContext

I = TypeVar("I")  # noqa: E741 - the conventional name for an input type variable
R = TypeVar("R")
_MS = timedelta(milliseconds=1)


class DefinitionOwner(Protocol):
    """What a registered definition asks of its registry."""

    payload_cap: int

    def enqueue(
        self,
        job: JobDefinition[Any, Any],
        input: Any = None,
        *,
        connection: object = None,
        **options: Unpack[EnqueueOptions],
    ) -> JobRef:
        """Enqueue one job of ``job`` through the application's producer."""
        ...

    async def enqueue_async(
        self,
        job: JobDefinition[Any, Any],
        input: Any = None,
        *,
        connection: object = None,
        **options: Unpack[EnqueueOptions],
    ) -> JobRef:
        """The async twin of ``enqueue``."""
        ...


class JobDefinition(Generic[I, R]):
    """A declared job: name, types, policy and (in workers) its handler."""

    def __init__(
        self,
        name: str,
        handler: Callable[..., R | Awaitable[R]] | None,
        policy: JobPolicy,
        *,
        input_type: Any = None,
        result_type: Any = None,
        system: bool = False,
        codec: str | Codec | None = None,
    ) -> None:
        self.owner: DefinitionOwner | None = None
        """The registry this definition belongs to (set when it is registered)."""
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
        if policy.schedules and self.takes_input and handler is not None:
            # A policy error, as the schedules guide documents: the schedule and the handler's
            # input cannot go together.
            raise InvalidPolicyError(
                "schedule",
                f"job {self.name!r} has a schedule, so its handler must take no input",
                "a scheduled handler takes only ctx: a firing has nothing to pass but the "
                "instant, which it reads from ctx.firing",
            )
        # ``codec=`` names the codec of both input and result; without it the types choose
        # (text for str, bytes for bytes, JSON for the rest). An unknown name fails here.
        self.codec: Codec | None = None if codec is None else codecs.resolve(codec)
        self.input_codec: Codec = self.codec or codec_for(self.input_type)
        self.result_codec: Codec = self.codec or codec_for(self.result_type)

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
            if hints.get(p.name) in (JobContext, SyncJobContext) or (
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
        returned = _without_directives(hints.get("return", None))
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
        timeout, retention = self.policy.timeout, self.policy.retention
        return DefinitionSpec(
            name=self.name,
            max_attempts=self.policy.max_attempts,
            backoff=str(self.policy.backoff),
            timeout_ms=None if timeout is None else max(1, timeout // timedelta(milliseconds=1)),
            priority=self.policy.priority,
            audit_level=self.policy.audit,
            concurrency_limit=self.policy.concurrency_limit,
            meter=self.gates().meter,
            retention_ms=None if retention is None else retention // timedelta(milliseconds=1),
            tenant_scope=self.policy.tenant,
            tags=json.dumps(sorted(self.policy.tags)),
        )

    def contract(self) -> Contract:
        """The shape of this definition's input and result, as the drift guard compares it."""
        shape = contract_of(self.input_type if self.takes_input else None, self.result_type)
        return Contract(self.name, fingerprint(shape), shape)

    def gates(self, concurrency_key: str | None = None) -> JobGates:
        """The admission gates a job of this definition passes, given its enqueue's key."""
        p = self.policy
        return gates_for(self.name, concurrency_key, p.concurrency_limit, p.rate_limit, p.rate_key)

    def request(self, input: I | None = None, **options: Unpack[EnqueueOptions]) -> JobRequest:
        """Describe one enqueue of this job (for ``enqueue_batch``); validates now."""
        cap = DEFAULT_PAYLOAD_CAP if self.owner is None else self.owner.payload_cap
        return JobRequest.build(self, input, payload_cap=cap, **options)

    def enqueue(
        self,
        input: I | None = None,
        *,
        connection: object = None,
        **options: Unpack[EnqueueOptions],
    ) -> JobRef:
        """Enqueue one job of this definition (sync). Options as ``Acta.enqueue``."""
        return self._owner().enqueue(self, input, connection=connection, **options)

    async def enqueue_async(
        self,
        input: I | None = None,
        *,
        connection: object = None,
        **options: Unpack[EnqueueOptions],
    ) -> JobRef:
        """Enqueue one job of this definition (async)."""
        return await self._owner().enqueue_async(self, input, connection=connection, **options)

    def _owner(self) -> DefinitionOwner:
        if self.owner is None:
            raise ConfigurationError(
                f"job {self.name!r} is not registered with an application; declare it with "
                "@app.job or app.define, or pass it to app.add"
            )
        return self.owner

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


@dataclass(frozen=True, slots=True)
class JobRequest:
    """A validated, encoded request to enqueue one job."""

    definition: JobDefinition[Any, Any]
    payload: bytes
    priority: int
    run_at: datetime | None
    delay: timedelta
    dedup_key: str | None
    correlation_key: str | None
    tags: tuple[str, ...]
    lane: str | None = None
    concurrency_key: str | None = None
    deadline_at: datetime | None = None
    deadline_in: timedelta | None = None
    """A deadline given as a duration: counted from the enqueue."""
    deadline_strict: bool = True
    tenant: str | None = None
    """The registered tenant key the job is about."""
    dedup_mode: int = 1
    """How long ``dedup_key`` refuses a repeat (``DEDUP_MODES``): 1 forever, 2 while a job
    with the key is unfinished, 3 within ``dedup_window`` of that job's creation."""
    dedup_window: timedelta | None = None

    @classmethod
    def build(
        cls,
        definition: JobDefinition[Any, Any],
        input: object = None,
        *,
        payload_cap: int = DEFAULT_PAYLOAD_CAP,
        inherit_tenant: bool = False,
        **options: Unpack[EnqueueOptions],
    ) -> JobRequest:
        """Validate one enqueue's options (``EnqueueOptions``; any other name is an
        UnknownOptionError naming it). ``inherit_tenant`` (a child job: it takes its parent's
        tenant) lets a definition that requires a tenant go without one here."""
        check_options(options, ENQUEUE_OPTIONS, "enqueue")
        return cls._build(
            definition, input, payload_cap=payload_cap, inherit_tenant=inherit_tenant, **options
        )

    @classmethod
    def _build(
        cls,
        definition: JobDefinition[Any, Any],
        input: object = None,
        *,
        payload_cap: int = DEFAULT_PAYLOAD_CAP,
        delay: str | float | timedelta | None = None,
        not_before: datetime | None = None,
        priority: int | None = None,
        dedup_key: str | None = None,
        dedup_mode: str | None = None,
        dedup_window: str | float | timedelta | None = None,
        correlation_key: str | None = None,
        tags: Iterable[str] = (),
        lane: str | None = None,
        concurrency_key: str | None = None,
        deadline: datetime | str | float | timedelta | None = None,
        deadline_policy: str = "strict",
        tenant: str | None = None,
        inherit_tenant: bool = False,
    ) -> JobRequest:
        if delay is not None and not_before is not None:
            raise ValidationError(
                "delay", "both delay and not_before were given", "pass one of them"
            )
        run_at: datetime | None = None
        wait = timedelta(0)
        if delay is not None:
            # parse_duration caps durations at 365 days, which bounds delays too.
            wait = _ceil_ms(parse_duration(delay, field="delay", allow_zero=True))
        if not_before is not None:
            run_at = check_instant(not_before, "not_before")
        if deadline_policy not in ("strict", "advisory"):
            raise ValidationError(
                "deadline_policy", f"got {deadline_policy!r}", "'strict' or 'advisory'"
            )
        mode, window = dedup_mode_of(dedup_key, dedup_mode, dedup_window)
        deadline_at: datetime | None = None
        deadline_in: timedelta | None = None
        if isinstance(deadline, datetime):
            deadline_at = check_instant(deadline, "deadline")
        elif deadline is not None:
            deadline_in = _ceil_ms(parse_duration(deadline, field="deadline"))
        return cls(
            definition=definition,
            payload=encode_input(definition, input, payload_cap),
            priority=definition.policy.priority
            if priority is None
            else validate_priority(priority),
            run_at=run_at,
            delay=wait,
            dedup_key=None if dedup_key is None else validate_key(dedup_key, field="dedup_key"),
            dedup_mode=mode,
            dedup_window=window,
            correlation_key=(
                None
                if correlation_key is None
                else validate_key(correlation_key, field="correlation_key")
            ),
            tags=validate_tags(tags),
            lane=(
                definition.policy.lane
                if lane is None
                else validate_key(lane, field="lane", max_length=KEY_MAX)
            ),
            concurrency_key=(
                None
                if concurrency_key is None
                else validate_key(concurrency_key, field="concurrency_key", max_length=KEY_MAX)
            ),
            deadline_at=deadline_at,
            deadline_in=deadline_in,
            deadline_strict=deadline_policy == "strict",
            tenant=check_tenant(definition, tenant, inherit_tenant),
        )


DEDUP_MODES = {"forever": 1, "unfinished": 2, "window": 3}
"""The deduplication modes an enqueue may ask for, by name, and the code a job row stores."""


def dedup_mode_of(
    key: str | None, mode: str | None, window: str | float | timedelta | None
) -> tuple[int, timedelta | None]:
    """The mode code and window an enqueue's dedup options mean. A window alone means
    ``"window"``; a mode or window without a key, an unknown mode, ``"window"`` without a window
    or a window with another mode, and a window that is not a positive duration are refused."""
    if mode is None and window is None:
        return 1, None
    if key is None:
        field = "dedup_mode" if mode is not None else "dedup_window"
        raise ValidationError(field, "given without a dedup_key", "pass dedup_key too")
    if mode is not None and mode not in DEDUP_MODES:
        raise ValidationError(
            "dedup_mode", f"got {mode!r}", "'forever', 'unfinished' or 'window' (with dedup_window)"
        )
    if window is None:
        if mode == "window":
            raise ValidationError(
                "dedup_window", "dedup_mode='window' needs a window", "e.g. dedup_window='1h'"
            )
        return DEDUP_MODES[mode or "forever"], None
    if mode not in (None, "window"):
        raise ValidationError(
            "dedup_window",
            f"a window was given with dedup_mode={mode!r}",
            "a window goes with dedup_mode='window' (or no dedup_mode)",
        )
    # parse_duration refuses zero, negatives, non-durations and more than 365 days.
    return DEDUP_MODES["window"], _ceil_ms(parse_duration(window, field="dedup_window"))


def check_tenant(
    definition: JobDefinition[Any, Any], tenant: str | None, inherit: bool = False
) -> str | None:
    """The tenant key an enqueue names, checked: 1 to 200 characters, no control or invisible
    characters, no edge whitespace; and the definition's tenant scope (required, forbidden)."""
    scope = definition.policy.tenant
    if tenant is None:
        if scope == "required" and not inherit:
            raise TenantScopeError(
                "tenant",
                f"job {definition.name!r} requires a tenant and none was given",
                "pass tenant='<registered key>' (the job was declared with tenant='required')",
            )
        return None
    key = validate_key(tenant, field="tenant", max_length=KEY_MAX)
    if scope == "forbidden":
        raise TenantScopeError(
            "tenant",
            f"job {definition.name!r} takes no tenant and {key!r} was given",
            "leave tenant out (the job was declared with tenant='forbidden')",
        )
    return key


def _without_directives(tp: Any) -> Any:
    """A return annotation without the directive classes (``-> int | Reschedule``): a
    directive ends the run, it is never stored as the job's result."""

    def directive(arg: Any) -> bool:
        return isinstance(arg, type) and issubclass(arg, Directive)

    if directive(tp):
        return None
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        kept = [arg for arg in typing.get_args(tp) if not directive(arg)]
        if not kept:
            return None
        return functools.reduce(operator.or_, kept) if len(kept) > 1 else kept[0]
    return tp


def _ceil_ms(wait: timedelta) -> timedelta:
    """Round up to a whole millisecond, the ledger's precision: never due earlier than asked."""
    return -(-wait // _MS) * _MS


def encode_input(
    definition: JobDefinition[Any, Any], value: object, payload_cap: int = DEFAULT_PAYLOAD_CAP
) -> bytes:
    """Convert and encode a handler input, refusing anything over the application's cap."""
    if not definition.takes_input and value is not None:
        raise ValidationError(
            "input", f"job {definition.name!r} takes no input", "pass nothing (None)"
        )
    data = to_data(value, definition.input_type, "input")
    encoded = encode_value(definition.input_codec, data, "input")
    return check_size(encoded, payload_cap, "input")
