"""A certification record: the JSON a run leaves, and the markdown page rendered from it.

``write_record`` adds what the run did not know itself (versions, the commit, the machine),
writes ``<name>.json`` and renders ``<name>.md`` next to it. ``render`` is also usable on its
own (``python -m anvil certify --render record.json``). docs/certification/README.md explains
how to read a page.
"""

from __future__ import annotations

import json
import os
import platform
import sqlite3
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def commit() -> str:
    """The checked-out commit, marked when tracked files differ from it."""
    try:
        done = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, timeout=10
        )
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=10,
        )
    except OSError:
        return "unknown"
    commit = done.stdout.strip() or "unknown"
    return commit + (" (with uncommitted changes)" if dirty.stdout.strip() else "")


def _versions(record: dict[str, Any]) -> dict[str, str]:
    versions = {"python": platform.python_version(), "sqlite": sqlite3.sqlite_version}
    # acta's distribution is acta-jobs; "acta" on the index is another project.
    for key, package in (("acta", "acta-jobs"), ("psycopg", "psycopg")):
        try:
            versions[key] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[key] = "not installed"
    if record.get("server_version"):
        versions["postgresql"] = str(record.pop("server_version"))
    return versions


def _machine() -> dict[str, Any]:
    load = os.getloadavg() if hasattr(os, "getloadavg") else (0.0, 0.0, 0.0)
    return {
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "load_average_at_end": [round(x, 2) for x in load],
    }


def write_record(record: dict[str, Any], out: Path, name: str) -> Path:
    """Complete ``record``, write ``out/<name>.json`` and ``out/<name>.md``; the JSON path."""
    record["versions"] = _versions(record)
    record.setdefault("commit", commit())
    record["machine"] = _machine()
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{name}.json"
    path.write_text(json.dumps(record, indent=2, default=str) + "\n")
    (out / f"{name}.md").write_text(render(record))
    return path


def _cell(value: Any) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


def render(record: dict[str, Any]) -> str:
    """The markdown page of a record."""
    tier = record["tier"]
    summary = record["summary"]
    verdict = "PASSED" if record["passed"] else "FAILED"
    out = [
        f"# Certification {record['name']}",
        "",
        f"**{verdict}** · Tier {tier['name']} · {record['provider']} · seed {record['seed']} · "
        f"started {record['started_at']}",
        "",
        "Rendered from the JSON record next to this page by `anvil.certify.record`; read "
        "[README.md](README.md) for what each part means. Replay the same fault schedule with "
        f"`python -m anvil certify --provider {record['provider']} --tier {tier['name']} "
        f"--seed {record['seed']}`.",
        "",
    ]
    if record.get("broken_fencing"):
        out += ["This run used the deliberately broken worker (fencing disabled).", ""]
    out += [
        "## Summary",
        "",
        "| enqueued | ok | lost | duplicated | unexpected |",
        "| ---: | ---: | ---: | ---: | ---: |",
        f"| {summary['enqueued']} | {summary['ok']} | {summary['lost']} | "
        f"{summary['duplicated']} | {summary['unexpected']} |",
        "",
        "| measure | value |",
        "| --- | ---: |",
    ]
    out += [f"| {key.replace('_', ' ')} | {value} |" for key, value in record["stats"].items()]
    timings = record["timings"]
    out += [
        f"| enqueue time (s) | {timings['enqueue_seconds']} |",
        f"| run time, workers started to drained (s) | {timings['run_seconds']} |",
        f"| drained | {'yes' if timings['drained'] else 'NO'} |",
        "",
        "## Checks",
        "",
        "| check | violations | what it proves |",
        "| --- | ---: | --- |",
    ]
    for check in record["checks"]:
        out.append(
            f"| [`{check['name']}`](../../{check['file']}) | {check['violations']} | "
            f"{_cell(check['proves'])} |"
        )
    failing = [c for c in record["checks"] if c["violations"]]
    for check in failing:
        out += ["", f"### `{check['name']}`: {check['violations']} violation(s)", ""]
        rows = check["rows"]
        columns = list(rows[0]) if rows else []
        out += ["| " + " | ".join(columns) + " |", "|" + " --- |" * len(columns)]
        out += ["| " + " | ".join(_cell(row[c]) for c in columns) + " |" for row in rows]
    out += [
        "",
        "## Workload",
        "",
        "| workload | jobs | extra checks | what it does |",
        "| --- | ---: | --- | --- |",
    ]
    for w in record["workloads"]:
        checks = ", ".join(f"`{c}`" for c in w["checks"]) or "-"
        what = w["summary"] + (f" (skipped, {w['skipped']})" if w.get("skipped") else "")
        out.append(f"| {w['name']} | {w['jobs']} | {checks} | {_cell(what)} |")
    out += [
        "",
        f"Fleet: {tier['workers']} worker processes of {tier['executors']} executors, "
        f"heartbeat {tier['heartbeat']} s (leases of {4 * tier['heartbeat']:g} s); jobs fall "
        f"due over {tier['window']:g} s.",
        "",
        "## Faults",
        "",
        "| at (s) | fault | target | what happened |",
        "| ---: | --- | --- | --- |",
    ]
    out += [
        f"| {f['at']} | {f['kind']} | {f['target']} | {_cell(f['detail'])} |"
        for f in record["faults"]
    ]
    if record["faults_not_fired"]:
        left = ", ".join(f"{f['kind']} at {f['at']} s" for f in record["faults_not_fired"])
        out += ["", f"Planned but not fired (the run had drained): {left}."]
    if record["notes"]:
        out += ["", "## Notes", ""] + [f"- {_cell(n)}" for n in record["notes"]]
    versions = ", ".join(f"{k} {v}" for k, v in record["versions"].items())
    machine = record["machine"]
    out += [
        "",
        "## Provenance",
        "",
        f"- commit: `{record['commit']}`",
        f"- versions: {versions}",
        f"- machine: {machine['platform']}, {machine['cpus']} CPUs, load average at the end "
        f"{machine['load_average_at_end']}",
        "",
    ]
    return "\n".join(out)
