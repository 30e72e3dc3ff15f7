"""The instruments acta records on the meter named ``acta``, and what each one counts.

Attribute keys are shared by every instrument: ``acta.namespace`` always, ``acta.job.name``
where one job is concerned, and one more where an instrument splits by how something ended.
acta's own system jobs (``sys.*``, such as recovery) are not counted: they are housekeeping,
and their steady runs would drown the numbers an operator reads.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

from opentelemetry.metrics import CallbackOptions, MeterProvider, Observation

from acta.about import __version__

METER = "acta"

NAMESPACE = "acta.namespace"
JOB_NAME = "acta.job.name"
OUTCOME = "acta.outcome"
STATUS = "acta.status"
SEVERITY = "acta.alert.severity"
STEP_OUTCOME = "acta.step.outcome"
LOCK_OUTCOME = "acta.lock.outcome"
CHANNEL = "acta.alert.channel"
NOTICE = "acta.alert.notice"
DELIVERY = "acta.alert.delivery"

# Names and units, one place (docs/guide/observability.md lists them for users).
EXECUTIONS = "acta.executions"
EXECUTION_DURATION = "acta.execution.duration"
CLAIMS = "acta.claims"
SETTLES = "acta.settles"
LEASE_LOSSES = "acta.lease_losses"
EXECUTING = "acta.executing"
BACKLOG = "acta.backlog"
ALERTS_OPENED = "acta.alerts.opened"
ALERT_FAILURES = "acta.alerts.failures"
ALERT_NOTICES = "acta.alerts.notices"
ALERTS_RESOLVED = "acta.alerts.resolved"
STEPS = "acta.steps"
STEP_DURATION = "acta.step.duration"
LOCK_WAITS = "acta.lock.waits"
LOCK_WAIT_DURATION = "acta.lock.wait.duration"

BacklogReader = Callable[[], Mapping[str, int]]
"""Reads one namespace's backlog from its ledger: due, unclaimed jobs by job name."""


def acta_version() -> str:
    return __version__


class Instruments:
    """Every acta instrument, made once on ``provider``'s ``acta`` meter."""

    def __init__(self, provider: MeterProvider) -> None:
        meter = provider.get_meter(METER, acta_version())
        self.executions = meter.create_counter(
            EXECUTIONS, unit="{execution}", description="Runs of a job a worker carried to an end"
        )
        self.duration = meter.create_histogram(
            EXECUTION_DURATION, unit="s", description="How long a run took, start to settle"
        )
        self.claims = meter.create_counter(
            CLAIMS, unit="{job}", description="Jobs a worker leased from the ledger"
        )
        self.settles = meter.create_counter(
            SETTLES, unit="{job}", description="Settles a worker wrote, by the status written"
        )
        self.lease_losses = meter.create_counter(
            LEASE_LOSSES,
            unit="{job}",
            description="Leases recovery took back from a worker that went silent",
        )
        self.executing = meter.create_up_down_counter(
            EXECUTING, unit="{job}", description="Runs in progress in this process"
        )
        self.alerts_opened = meter.create_counter(
            ALERTS_OPENED, unit="{alert}", description="Alerts a handler opened with ctx.alert"
        )
        self.alert_failures = meter.create_counter(
            ALERT_FAILURES,
            unit="{failure}",
            description="Failures a settle reported to alerting (opening or joining an incident)",
        )
        self.alert_notices = meter.create_counter(
            ALERT_NOTICES,
            unit="{notice}",
            description="Alert notices handed to a channel, by notice and whether it took it",
        )
        self.alerts_resolved = meter.create_counter(
            ALERTS_RESOLVED,
            unit="{alert}",
            description="Failure incidents resolved because their job succeeded again",
        )
        self.steps = meter.create_counter(
            STEPS, unit="{step}", description="Durable steps that ended, by how they ended"
        )
        self.step_duration = meter.create_histogram(
            STEP_DURATION, unit="s", description="How long a step's body ran (steps that ran)"
        )
        # Fed by handler locks (ctx.lock): defined here so that dashboards can be built on the
        # names before every provider records them.
        self.lock_waits = meter.create_counter(
            LOCK_WAITS,
            unit="{wait}",
            description="Lock requests that found the lock held and had to wait, by outcome",
        )
        self.lock_wait_duration = meter.create_histogram(
            LOCK_WAIT_DURATION,
            unit="s",
            description="How long a contended lock request waited, by outcome",
        )
        self._backlogs: dict[str, BacklogReader] = {}
        # One gauge for every watched namespace: an instrument made twice under one name keeps
        # only its first callback, so the callback walks the registered readers.
        meter.create_observable_gauge(
            BACKLOG,
            callbacks=[self._observe_backlog],
            unit="{job}",
            description="Due jobs waiting for a worker, by job name (read at collection)",
        )

    def watch_backlog(self, namespace: str, read: BacklogReader) -> None:
        """Report ``namespace``'s backlog at each collection, read by ``read``."""
        self._backlogs[namespace] = read

    def _observe_backlog(self, options: CallbackOptions) -> Iterable[Observation]:
        found: list[Observation] = []
        for namespace, read in list(self._backlogs.items()):
            for name, count in sorted(read().items()):
                found.append(Observation(count, {NAMESPACE: namespace, JOB_NAME: name}))
        return found


def job_attributes(namespace: str, name: str) -> dict[str, str]:
    return {NAMESPACE: namespace, JOB_NAME: name}


def count_by_name(names: Sequence[str]) -> dict[str, int]:
    """How many of ``names`` there are of each (claims are counted per job name)."""
    counts: dict[str, int] = {}
    for name in names:
        counts[name] = counts.get(name, 0) + 1
    return counts
