"""Helpers for the tests that keep the reference docs true: markdown tables and SQL blocks,
and a small ledger with one job in every interesting state for the queries to run against."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from acta import Acta, JobContext, SyncJobContext
from acta.clock import ManualClock
from acta.policy.schedule import Schedule
from acta.provider.sqlite import SqliteProvider
from acta_testing import Host

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "docs" / "reference"

_HEADING = re.compile(r"^(#{2,4})\s+(.*?)\s*$")
_FIRST_CODE = re.compile(r"`([^`]+)`")
_FENCE = re.compile(r"^```(\w*)\s*$")


@dataclass(frozen=True, slots=True)
class Table:
    """One markdown table: the section it sits in (the first `code` of its heading), its
    header cells and its rows as cell lists, with the 1-based line of the header."""

    section: str
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    line: int


def _cells(line: str) -> tuple[str, ...]:
    inner = line.strip().strip("|")
    return tuple(cell.strip() for cell in re.split(r"(?<!\\)\|", inner))


def _is_rule(lines: list[str], i: int) -> bool:
    """Whether line ``i`` is a table's header rule (``| --- | :--: |``)."""
    return i < len(lines) and re.fullmatch(r"\|[\s:|-]+\|?", lines[i].strip()) is not None


def tables(path: Path) -> list[Table]:
    """Every table of ``path``, in order, outside code fences."""
    out: list[Table] = []
    section = ""
    lines = path.read_text("utf-8").splitlines()
    fenced = False
    i = 0
    while i < len(lines):
        line = lines[i]
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced and (m := _HEADING.match(line)):
            code = _FIRST_CODE.search(m.group(2))
            section = code.group(1) if code else m.group(2)
        elif not fenced and line.startswith("|") and _is_rule(lines, i + 1):
            header = tuple(c.lower() for c in _cells(line))
            rows = []
            j = i + 2
            while j < len(lines) and lines[j].startswith("|"):
                rows.append(_cells(lines[j]))
                j += 1
            out.append(Table(section, header, tuple(rows), i + 1))
            i = j
            continue
        i += 1
    return out


def column_tables(path: Path, first: str = "column") -> dict[str, Table]:
    """Tables whose first header cell is ``first``, keyed by section; one per section."""
    found: dict[str, Table] = {}
    for table in tables(path):
        if table.header and table.header[0] == first:
            assert table.section not in found, f"{path.name}: two {first} tables in {table.section}"
            found[table.section] = table
    return found


def name_of(cell: str) -> str:
    """The identifier a first cell documents: ``job_ref`` from "`job_ref`"."""
    m = _FIRST_CODE.search(cell)
    assert m, f"first cell {cell!r} should hold a `name`"
    return m.group(1)


def sections(path: Path) -> dict[str, str]:
    """The text under each heading, keyed like ``Table.section`` (up to the next heading)."""
    out: dict[str, list[str]] = {}
    current = ""
    fenced = False
    for line in path.read_text("utf-8").splitlines():
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced and (m := _HEADING.match(line)):
            code = _FIRST_CODE.search(m.group(2))
            current = code.group(1) if code else m.group(2)
            continue
        out.setdefault(current, []).append(line)
    return {name: "\n".join(lines) for name, lines in out.items()}


def fenced_blocks(path: Path, language: str) -> list[tuple[int, str, str]]:
    """``(line, preceding non-blank line, body)`` for each fence of ``language``."""
    out: list[tuple[int, str, str]] = []
    lines = path.read_text("utf-8").splitlines()
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if m and m.group(1):
            j = i + 1
            while j < len(lines) and lines[j].strip() != "```":
                j += 1
            if m.group(1) == language:
                before = next((lines[k] for k in range(i - 1, -1, -1) if lines[k].strip()), "")
                out.append((i + 1, before.strip(), "\n".join(lines[i + 1 : j])))
            i = j + 1
            continue
        i += 1
    return out


# -- a ledger with something in every column ---------------------------------------------------

START = datetime(2026, 1, 1, tzinfo=UTC)


def populate(path: Path) -> None:
    """Fill a fresh ledger at ``path``: succeeded, retried, failed, cancelled, delayed and
    lease-held jobs, a dead worker, tags and keys, gates, and durable execution (steps, waits,
    children, progress, alerts), so that every view column is exercised."""
    app = Acta()
    provider = SqliteProvider(path)
    provider.migrate()
    host = Host(app, provider, ManualClock(START))
    try:
        _scenario(app, host)
    finally:
        host.close()
        provider.close()


def _scenario(app: Acta, host: Host) -> None:
    flaky_runs: list[int] = []

    @app.job("send-receipt")
    def send_receipt(order: str) -> str:
        return f"receipt for {order}"

    @app.job("sync-crm", backoff="1s")
    def sync_crm(ctx: JobContext) -> None:
        flaky_runs.append(ctx.execution)
        if ctx.execution == 1:
            raise ConnectionError("crm timed out")

    @app.job("charge-card", max_attempts=2, backoff="1s", tenant="forbidden")
    def charge_card(order: str) -> None:
        raise RuntimeError(f"card declined for {order}")

    app.define("rebuild-index")
    main = host.worker
    peer = host.add_worker()
    doomed = host.add_worker()

    send_receipt.enqueue(
        "ORD-7",
        dedup_key="receipt-ORD-7",
        correlation_key="order-7",
        tags=["billing", "email"],
    )
    assert host.tick(main) == "completed"
    sync_crm.enqueue()
    charge_card.enqueue("ORD-8", tags=["billing"])
    assert host.run_until_idle(main) == 4
    app.cancel(app.enqueue("rebuild-index", delay="1h"), "not needed after all")

    host.kill(doomed)
    host.advance(doomed.dead_after + peer.heartbeat)
    assert host.tick(peer) == "nothing-claimed"  # recovery declares ``doomed`` dead

    _durable(app, host)
    _gates(app, host)
    holder = host.add_worker(executors=4)

    @app.job("export-ledger")
    def export_ledger(ctx: SyncJobContext) -> None:
        with ctx.lock("ledger-export-file"):  # held with the lease: locks_view shows it
            host.kill(holder)  # dies mid-run: its lease stays in the ledger until it lapses

    export_ledger.enqueue(concurrency_key="ledger-export")  # the slot stays held with the lease
    assert host.tick(holder) == "killed"
    send_receipt.enqueue("ORD-9", delay="2h", priority=5)
    # The first ORD-7 job finished, so an enqueue in mode unfinished takes its key over; and a
    # key held for a window.
    send_receipt.enqueue("ORD-7", dedup_key="receipt-ORD-7", dedup_mode="unfinished", delay="2h")
    app.enqueue("rebuild-index", dedup_key="rebuild-index", dedup_window="10m", delay="2h")
    _schedules(app, host)
    _alerts(app, host)
    app.ops.policy.set(
        "sync-crm",
        max_attempts=3,
        timeout="30s",
        alerts="all",
        retention="30d",
        expected_version=0,
        actor="ann",
        reason="the CRM is slow this week",
    )
    app.settings.set("export.batch", 500, scope="global", expected_version=0)
    app.settings.set(
        "export.batch",
        {"size": 50},
        job="send-receipt",
        expected_version=0,
        actor="ann",
        reason="the mail relay throttles",
    )
    _tenants(app, host)


def _tenants(app: Acta, host: Host) -> None:
    """Two tenants, one suspended, a job of each; the namespace with an owner."""
    app.tenants.register("acme-corp", tags=["gold"], metadata={"region": "eu"})
    app.tenants.register("initech")
    app.enqueue("send-receipt", "ORD-10", tenant="acme-corp", delay="1h")
    app.enqueue("send-receipt", "ORD-11", tenant="initech", delay="1h")
    app.tenants.suspend("initech", reason="contract ended", actor="ann")
    app.namespaces.update(
        expected_version=1, tags=["core"], metadata={"team": "payments"}, actor="ann"
    )


def _schedules(app: Acta, host: Host) -> None:
    """A job with two schedules: a cron one paused for a month, an interval one overridden by
    an operator, then triggered twice: the second firing is still pending (its worker died
    in it)."""

    @app.job(
        "daily-report",
        schedules={
            "nightly": Schedule(cron="0 2 * * *", zone="Europe/Paris", misfire="catch_up"),
            "hourly": "1h",
        },
    )
    def daily_report(ctx: JobContext) -> None:
        if ctx.execution > 1:
            host.kill(firer)  # dies mid-firing: the firing stays pending

    firer = host.add_worker()
    host.advance(0)  # registers it (and the job's schedules) without moving the clock
    app.schedules.override("daily-report", "hourly", every="2h", expected_version=1)
    app.schedules.pause("daily-report", "nightly", until=host.clock.now() + timedelta(days=30))
    app.schedules.trigger("daily-report", "hourly", reason="rerun for finance")
    assert host.tick(firer) == "completed"
    app.schedules.trigger("daily-report", "hourly", reason="and once more")
    assert host.tick(firer) == "killed"


def _gates(app: Acta, host: Host) -> None:
    """A lane with a head and a member behind it, a key gate with an operator's override, a
    definition's own gate, and a meter that turned a job away (admitted, bounced, promoted)."""

    @app.job("ship-order", concurrency_limit=2, rate_limit="1/s", rate_key="carrier-api")
    def ship_order(order: str) -> None: ...

    ship_order.enqueue("ORD-20", lane="customer-42", concurrency_key="acme")
    ship_order.enqueue("ORD-21", lane="customer-42")
    assert host.tick() == "completed"  # ORD-20 passes key 'acme' and the meter; ORD-21 promoted
    assert host.tick() == "bounced"  # ORD-21 passes gate 'ship-order', books the next turn
    ship_order.enqueue("ORD-22", lane="customer-42")  # blocked behind ORD-21
    (acme,) = [g for g in app.gates() if g.name == "acme"]
    app.set_concurrency_limit(key="acme", limit=3, expected_version=acme.version)
    (carrier,) = app.meters()
    app.set_rate_limit("carrier-api", "2/s", expected_version=carrier.version)


def _bank_timeout() -> str:
    raise TimeoutError("the bank did not answer")


def _durable(app: Acta, host: Host) -> None:
    """Durable execution, leaving nothing due (the gates' ticks come next): a parent suspended
    on two delayed children with a step, a variable, progress and an alert; an at-most-once
    step interrupted by its body's error; a signal wait released; a sleep still running."""

    @app.job("ship-parcel")
    def ship_parcel(parcel: str) -> str:
        return f"shipped {parcel}"

    @app.job("fulfil-order")
    async def fulfil_order(order: str, ctx: JobContext) -> None:
        await ctx.step("reserve-stock", lambda: f"reserved {order}")
        await ctx.set("warehouse", "north")
        await ctx.set_progress(1, 3, "stock reserved")
        await ctx.alert("courier quota low", "2 parcels left today", severity="warning")
        await ctx.spawn_many(ship_parcel, [f"{order}/1", f"{order}/2"], group="parcel", delay="1d")
        await ctx.wait_children(timeout="2d")

    @app.job("refund-order", backoff="1d")
    async def refund_order(order: str, ctx: JobContext) -> None:
        await ctx.step("wire-refund", _bank_timeout, at_most_once=True)

    @app.job("approve-discount")
    async def approve_discount(ctx: JobContext) -> str:
        answer: str = await ctx.wait_signal("approved", timeout="1d")
        return answer

    @app.job("nightly-digest")
    async def nightly_digest(ctx: JobContext) -> None:
        await ctx.sleep("6h")

    fulfil_order.enqueue("ORD-30", deadline="3d", deadline_policy="advisory")
    assert host.tick() == "suspended"  # waits for its children, due in a day
    refund_order.enqueue("ORD-31")
    assert host.tick() == "rearmed"  # the step is interrupted; the retry is a day away
    approval = approve_discount.enqueue(deadline="1h")
    assert host.tick() == "suspended"
    assert app.signal(approval, "approved", "yes") == "released"
    assert host.tick() == "completed"
    nightly_digest.enqueue()
    assert host.tick() == "suspended"


def _broken_pager(notice: object) -> None:
    raise ConnectionError("pager service down")


def _alerts(app: Acta, host: Host) -> None:
    """sys.alerts notifies the charge-card incident and the courier alert (one channel fails:
    it is owed the notice); an operator acknowledges the incident and resolves the other."""
    app.alerting.logging("ops-log")
    app.alerting.callable("pager", _broken_pager)
    notifier = host.add_worker()  # registered now that alerting is declared: runs sys.alerts
    assert host.tick(notifier) == "nothing-claimed"
    incident, manual = sorted(app.alerts.list(), key=lambda a: a.kind)
    app.alerts.acknowledge(incident.alert_id, by="ana", reason="card processor contacted")
    app.alerts.resolve(manual.alert_id, by="ana", reason="courier quota raised")
