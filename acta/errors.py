"""The exceptions acta raises to its users.

Every error names what was wrong and what is allowed. Validation errors are raised at the call
site, before anything is written. This module must not import the rest of acta.
"""

from __future__ import annotations

from datetime import datetime


class ActaError(Exception):
    """Base class of every error acta raises on purpose."""


class ValidationError(ActaError, ValueError):
    """Bad input at a call site: nothing was written.

    ``field`` names the argument or path that was wrong; ``rule`` states what is allowed.
    """

    def __init__(self, field: str, problem: str, rule: str = "") -> None:
        self.field = field
        self.problem = problem
        self.rule = rule
        text = f"{field}: {problem}"
        if rule:
            text += f" ({rule})"
        super().__init__(text)


class UnknownOptionError(ValidationError, TypeError):
    """A keyword option the call does not take (a typo, usually): ``field`` names it, ``rule``
    lists the options the call takes. A ``TypeError`` too, as Python's own for a bad keyword."""


class InvalidNameError(ValidationError):
    """A job name, namespace, key, tag or schema name broke its character or length rule."""


class InvalidPolicyError(ValidationError):
    """A job policy (backoff, timeout, attempts, priority, audit) is not valid."""


class InvalidJobRefError(ValidationError):
    """A string is not a job reference (``job_`` + 26 Crockford base32 characters)."""


class PayloadError(ValidationError):
    """A payload cannot be encoded: unsupported value, NaN, lone surrogate, NUL, deep nesting."""


class PayloadTooLargeError(PayloadError):
    """The encoded payload is over the size cap; it was refused, never truncated."""


class UnknownCodecError(ValidationError, LookupError):
    """A codec name that is not registered in this process (see ``acta.codecs``)."""


class BlobIntegrityError(ActaError):
    """Bytes fetched for a ``BlobRef`` differ from what the reference promised (size or checksum).

    ``field`` is what differed (``size`` or ``checksum``); ``expected`` and ``found`` say how."""

    def __init__(self, uri: str, field: str, expected: object, found: object) -> None:
        self.uri = uri
        self.field = field
        self.expected = expected
        self.found = found
        super().__init__(f"blob {uri}: {field} is {found!r}, the reference says {expected!r}")


class InputDecodeError(ActaError):
    """A stored payload no longer decodes into the handler's input type."""

    def __init__(self, path: str, problem: str) -> None:
        self.path = path
        self.problem = problem
        super().__init__(f"{path}: {problem}" if path else problem)


class UnknownJobError(ActaError, LookupError):
    """A job name that this application has not declared."""


class JobNotFoundError(ActaError, LookupError):
    """No job with that reference exists in this namespace."""


class JobPurgedError(JobNotFoundError):
    """The job existed but retention purged its rows (a ``JobNotFoundError`` too, so code that
    treats a missing job as missing keeps working). What the ledger still knows is attached:
    its ``name``, final ``status`` (a label such as ``"succeeded"``), and the instants it
    ``finished_at`` and was ``purged_at``; its timeline stays readable with ``events(ref)``
    until the event retention."""

    def __init__(
        self, ref: str, name: str, status: str, finished_at: datetime, purged_at: datetime
    ) -> None:
        super().__init__(
            f"job {ref} ({name}, {status}) was purged at {purged_at.isoformat()} by retention; "
            "its events remain readable with events(ref)"
        )
        self.ref = ref
        self.name = name
        self.status = status
        self.finished_at = finished_at
        self.purged_at = purged_at


class ConfigurationError(ActaError):
    """The application or worker is configured in a way that cannot work."""


class SchemaError(ActaError):
    """The ledger schema is missing, older than this code, or was altered."""


class DatabaseUnavailableError(ActaError):
    """The database could not be reached; the message names the host and the cause."""


class ConflictError(ActaError):
    """The ledger kept changing under an operation that reads before it writes; nothing was
    written and the call may simply be repeated."""


class StepInterruptedError(ActaError):
    """An at-most-once step began in an earlier execution and recorded no outcome (its worker
    died, or its body raised): acta does not call the body again.

    The body ran zero times or once, and acta cannot tell which. Reconcile with the system the
    step talked to (look the effect up by a key you can recompute, such as the job ref plus the
    step name), then carry on, fail, or alert. Left uncaught, it fails the job for good with
    reason ``step-interrupted``.
    """

    def __init__(self, step: str, execution: int, error: str | None = None) -> None:
        self.step = step
        self.execution = execution
        self.error = error
        how = (
            f"its body raised: {error.splitlines()[0]}"
            if error
            else "no outcome was recorded (the worker may have died while it ran)"
        )
        super().__init__(
            f"at-most-once step {step!r} began in execution {execution} and {how}; its body is "
            "not run again: reconcile with the system it called"
        )


class StepConflictError(ActaError, ValueError):
    """One execution used a step name twice with two different bodies: names identify steps,
    so a name must mean one piece of work."""


class LeaseLostError(ActaError):
    """A durable write was refused: this run no longer holds its job's lease (another worker
    may be running it). The run is stopped; nothing it writes from now on is kept."""


class JobFailedError(ActaError):
    """A job waited for (``run_and_wait``, ``wait``) ended failed or cancelled."""

    def __init__(self, ref: object, status: str, error: str | None) -> None:
        self.ref = ref
        self.status = status
        self.error = error
        detail = f": {error.splitlines()[0]}" if error else ""
        super().__init__(f"job {ref} ended {status}{detail}")


class WaitTimeoutError(ActaError, TimeoutError):
    """A wait for a job's outcome ran out of time; the job itself goes on."""


class LockTimeoutError(ActaError, TimeoutError):
    """``ctx.lock`` waited its whole timeout and another job still held the lock. ``key`` is
    the lock, ``holder`` the job ref that held it when the wait gave up (None if unknown)."""

    def __init__(self, key: str, holder: str | None, timeout: float) -> None:
        self.key = key
        self.holder = holder
        self.timeout = timeout
        by = f" by job {holder}" if holder else ""
        super().__init__(f"lock {key!r} still held{by} after waiting {timeout:g} s")


class ScheduleNotFoundError(ActaError, LookupError):
    """No schedule by that job name (and schedule name) in this namespace."""


class ContractDriftError(ConfigurationError):
    """A worker's build declares a job whose input or result shape differs from the one the
    ledger recorded, and the application refuses drift: the worker does not start."""


class JobStateError(ConflictError):
    """An operator verb met a job in a state it does not apply to (restart a running job,
    reschedule a finished one). ``state`` names the state found; ``allowed`` the ones the verb
    takes. Nothing was written."""

    def __init__(self, message: str, state: str, allowed: tuple[str, ...]) -> None:
        super().__init__(message)
        self.state = state
        self.allowed = allowed


class EnqueueRefusedError(ActaError):
    """The ledger refused an enqueue at its commit because of what it holds now (a suspended
    tenant, a retired definition). Nothing of the call was written: a batch is refused whole."""


class TenantSuspendedError(EnqueueRefusedError):
    """The enqueue named a tenant an operator suspended; ``tenant`` is its key. Jobs already
    admitted keep running; new ones are refused until the tenant is resumed."""

    def __init__(self, tenant: str) -> None:
        super().__init__(
            f"tenant {tenant!r} is suspended: its new jobs are refused until an operator "
            f"resumes it (acta tenants resume {tenant})"
        )
        self.tenant = tenant


class DefinitionRetiredError(EnqueueRefusedError):
    """The enqueue named a job an operator retired; ``job_name`` is its name."""

    def __init__(self, job_name: str) -> None:
        super().__init__(
            f"job {job_name!r} is retired: it takes no new jobs (retiring is for good; "
            "register the work under a new job name)"
        )
        self.job_name = job_name


class UnknownTenantError(ActaError, LookupError):
    """A tenant key no one registered: an enqueue names only registered tenants
    (``app.tenants.register(key)``); ``tenant`` is the key."""

    def __init__(self, tenant: str) -> None:
        super().__init__(
            f"no tenant {tenant!r} is registered: register it once with "
            f"app.tenants.register({tenant!r}) (or `acta tenants register`) before enqueueing"
        )
        self.tenant = tenant


class TenantScopeError(ValidationError):
    """An enqueue broke its definition's tenant scope: a tenant where the job forbids one, or
    none where it requires one. Nothing was written."""
