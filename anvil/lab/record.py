"""The record of a non-interactive lab run: JSON for machines, markdown for people.

The JSON holds the drain's record (``anvil.lab.drain``) and the environment it ran in
(``anvil.report.environment``: date, machine, Python, PostgreSQL and acta versions, command).
The markdown says the same in a few lines and a table, with the verdict first.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from anvil import report


def document(record: dict[str, Any], command: str, dsn: str | None) -> dict[str, Any]:
    return {"environment": report.environment(command, dsn), "record": record}


def write_json(doc: dict[str, Any], path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=2, default=str) + "\n")
    return path


def markdown(doc: dict[str, Any]) -> str:
    env, rec = doc["environment"], doc["record"]
    m = env["machine"]
    pg = env.get("postgres") or {}
    verdict = "none lost, nothing stuck leased" if rec["ok"] else "FAILED (see the checks)"
    if not rec.get("drained", True):
        so_far = "nothing lost so far" if rec["none_lost_so_far"] else "LOSS FOUND"
        verdict = f"NOT drained before the timeout; {so_far}"
    rows = [
        ("jobs", f"{rec['jobs']:,}"),
        ("worker processes (kept at)", str(rec["plan"]["workers"])),
        ("executors per worker", str(rec["executors_per_worker"])),
        ("execution profile", rec.get("profile", "buffered")),
        ("heartbeat", f"{rec['heartbeat_s']:g} s (lease {4 * rec['heartbeat_s']:g} s)"),
        ("kill every", f"{rec['plan']['kill_every']:g} s"),
        ("enqueue (batched, during the drain)", f"{rec['enqueue_s']:,.1f} s"),
        ("drain, from the first enqueue", f"{rec['duration_s']:,.1f} s"),
        ("rate", f"{rec['rate_jobs_per_s']:,.0f} jobs/s"),
        ("workers SIGKILLed", str(rec["kills"])),
        ("workers declared dead by recovery (worker-died)", str(rec["workers_declared_dead"])),
        ("jobs taken back by recovery (lease-lost)", f"{rec['recoveries']:,}"),
        ("VACUUM (ANALYZE) of runtime by the lab", str(rec.get("vacuum_analyze_runs", 0))),
        ("jobs run more than once", f"{rec['jobs_run_more_than_once']:,}"),
        ("jobs written by the producer", f"{rec['jobs_written']:,}"),
        ("jobs in the ledger", f"{rec['jobs_in_ledger']:,}"),
        ("written but missing from the ledger", f"{rec['missing']:,}"),
        ("failed or cancelled", f"{rec['failed_or_cancelled']:,}"),
        ("unfinished, ready for the next claim", f"{rec['unfinished_ready']:,}"),
        ("unfinished in any other state", f"{rec['unfinished_not_ready']:,}"),
        ("succeeded", f"{rec['succeeded']:,}"),
        ("**lost** (not succeeded)", f"**{rec['lost']:,}**"),
        ("**stuck leased** after the stop", f"**{rec['stuck_leased']:,}**"),
    ]
    lines = [
        f"# Anvil lab run, {env['date']}: {rec['jobs']:,} jobs on {rec['provider']}, {verdict}",
        "",
        f"- started: {env['started_at']}",
        f"- machine: {m.get('cpu', '?')}, {m.get('cores', '?')} cores, "
        f"{m.get('ram_gib', '?')} GiB RAM, {m.get('os', '')}",
        f"- python {env['python']}, psycopg {env.get('psycopg')} ({env.get('psycopg_impl')}), "
        f"PostgreSQL {pg.get('version', '-')}, sqlite {env['sqlite']}",
        f"- acta {env['acta']['version']} at commit {env['acta']['commit'][:12]}",
        f"- command: `{env['command']}`",
        "",
        "| what | value |",
        "| --- | --- |",
        *[f"| {k} | {v} |" for k, v in rows],
        "",
        *_memory(rec.get("memory")),
    ]
    return "\n".join(lines)


def _mib(kib: int | None) -> str:
    return "-" if kib is None else f"{kib / 1024:,.1f}"


def _memory(memory: dict[str, Any] | None) -> list[str]:
    """The workers' resident memory (anvil.lab.memory), one row per worker process."""
    if not memory or not memory.get("workers"):
        return []
    lines = [
        "Worker memory (RSS, MiB; growth counted from the first sample after a minute of life):",
        "",
        "| worker | samples | lived (s) | first | after 1 min | max | last | growth after 1 min |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for w in memory["workers"]:
        lines.append(
            f"| {w['worker']} | {w['samples']} | {w['lived_s']:,.0f} | {_mib(w['first_kib'])} | "
            f"{_mib(w['warm_kib'])} | {_mib(w['max_kib'])} | {_mib(w['last_kib'])} | "
            f"{_mib(w['growth_after_warm_up_kib'])} |"
        )
    return [*lines, ""]


def write(doc: dict[str, Any], json_path: Path) -> tuple[Path, Path]:
    """Write ``json_path`` and the markdown beside it (same name, ``.md``)."""
    write_json(doc, json_path)
    md = json_path.with_suffix(".md")
    md.write_text(markdown(doc))
    return json_path, md
