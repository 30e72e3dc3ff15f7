"""The verdict of a certification run, from the ledger's rows alone.

``judge`` runs the certification's own checks (``anvil.checks.CERTIFY``) and each workload's
(lanes, gates, durable steps ...), keeps every check's violating rows, and sums them up the
way Jepsen does: of the jobs the run enqueued, how many ended ok, how many were lost (missing,
or never terminal), duplicated (run or settled more than their history explains, a fenced
write, a step re-run) or unexpected (a wrong outcome, a job nobody enqueued, a rolled-back
enqueue that exists).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from decimal import Decimal
from typing import Any

from anvil.certify.ledger import Ledger
from anvil.certify.workloads import Workload
from anvil.checks import CERTIFY, FOLDER, check_path, run_check

SHOWN = 20  # violating rows kept per check in a record
LOST = ("certify_lost", "certify_stuck")
DUPLICATED = (
    "certify_settled_twice",
    "certify_extra_runs",
    "certify_fenced_writes",
    "durable_steps_once",
    "durable_amo_once",
)
UNEXPECTED = ("certify_unexpected",)


def proves(name: str, dialect: str) -> str:
    """The first paragraph of a check's header comment: what it proves."""
    lines: list[str] = []
    for line in check_path(name, dialect).read_text().splitlines():
        if not line.startswith("--"):
            break
        text = line[2:].strip()
        if not text:
            break
        lines.append(text)
    return " ".join(lines)


def _plain(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, bytes | memoryview):
        return bytes(value).hex()
    return value


def judge(ledger: Ledger, workloads: Sequence[Workload]) -> dict[str, Any]:
    """Every check's result and the summary; ``passed`` when no check found a violation."""
    names = list(CERTIFY)
    from anvil.certify.workloads.outboxed import source_schema

    # Run-specific parameters: where this run's outbox source is (outbox_delivered_once).
    params: dict[str, Any] = {"outbox_schema": source_schema(ledger.schema)}
    for workload in workloads:
        names += [n for n in workload.checks if n not in names]
        params.update(workload.params)
    results = []
    flagged: dict[str, set[str]] = {"lost": set(), "duplicated": set(), "unexpected": set()}
    for name in names:
        rows = run_check(ledger.conn, name, ledger.dialect, ledger.schema, params)
        refs = {str(r["job_ref"]) for r in rows if r.get("job_ref") is not None}
        if name in LOST:
            flagged["lost"] |= refs
        elif name == "certify_outcome":
            for row in rows:
                kind = "lost" if int(row["status"]) < 100 else "unexpected"
                flagged[kind].add(str(row["job_ref"]))
        elif name in DUPLICATED:
            flagged["duplicated"] |= refs
        elif name in UNEXPECTED:
            flagged["unexpected"] |= refs
        else:
            flagged["duplicated" if "overlap" in name or "limit" in name else "unexpected"] |= refs
        results.append(
            {
                "name": name,
                "file": str(check_path(name, ledger.dialect).relative_to(FOLDER.parent.parent)),
                "proves": proves(name, ledger.dialect),
                "violations": len(rows),
                "rows": [{k: _plain(v) for k, v in row.items()} for row in rows[:SHOWN]],
            }
        )
    expected = ledger.value("SELECT count(*) FROM {schema}.expected WHERE outcome <> 0")
    mine = {
        str(ref)
        for (ref,) in ledger.rows("SELECT job_ref FROM {schema}.expected WHERE outcome <> 0")
    }
    bad = (flagged["lost"] | flagged["duplicated"] | flagged["unexpected"]) & mine
    summary = {
        "enqueued": expected,
        "ok": expected - len(bad),
        "lost": len(flagged["lost"]),
        "duplicated": len(flagged["duplicated"]),
        "unexpected": len(flagged["unexpected"]),
    }
    passed = all(r["violations"] == 0 for r in results)
    return {"passed": passed, "summary": summary, "checks": results}
