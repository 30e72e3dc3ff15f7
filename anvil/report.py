"""Benchmark reports: where the numbers were taken (machine, versions), JSON and markdown.

A result is one JSON document (everything: every run of every measurement) and a markdown page
rendered from it, both named ``<date>-<machine>``. ``docs/benchmarks/README.md`` lists them
between two marker comments, which ``index`` rewrites.
"""

from __future__ import annotations

import json
import os
import platform
import re
import sqlite3
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any

import psycopg

import acta
from anvil.measure import Measurement
from anvil.workload import REPO, clock

Doc = dict[str, Any]
AIMS = {
    "enqueue_batch": 45_000.0,  # jobs/s, PostgreSQL
    "drain_one_process": 1_500.0,  # jobs/s, PostgreSQL, every state change committed
    "pickup_notify_p50": 5.0,  # ms, PostgreSQL with LISTEN/NOTIFY
}
INDEX_START, INDEX_END = "<!-- results -->", "<!-- /results -->"


def _read(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError:
        return ""


def _git(*args: str) -> str:
    try:
        done = subprocess.run(
            ["git", *args], cwd=REPO, capture_output=True, text=True, timeout=10, check=True
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout.strip()


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def machine() -> Doc:
    """CPU model, cores, memory, OS and kernel of this machine."""
    cpu = re.search(r"^model name\s*:\s*(.+)$", _read("/proc/cpuinfo"), re.M)
    mem = re.search(r"^MemTotal:\s*(\d+) kB", _read("/proc/meminfo"), re.M)
    os_name = re.search(r'^PRETTY_NAME="?([^"\n]+)"?', _read("/etc/os-release"), re.M)
    return {
        "cpu": cpu.group(1).strip() if cpu else platform.processor() or "unknown",
        "cores": os.cpu_count(),
        "ram_gib": round(int(mem.group(1)) / 2**20, 1) if mem else None,
        "os": os_name.group(1) if os_name else platform.system(),
        "kernel": platform.release(),
    }


def postgres_server(dsn: str) -> Doc:
    """The server's version and the settings that bear on commit cost, and autovacuum, which
    decides whether dead rows pile up over a long drain (a CI configuration may turn it off)."""
    settings = ("synchronous_commit", "fsync", "wal_sync_method", "shared_buffers", "autovacuum")
    with psycopg.connect(dsn, autocommit=True) as conn:
        found: Doc = {"version": conn.execute("SHOW server_version").fetchone()[0]}  # type: ignore[index]
        for name in settings:
            found[name] = conn.execute(f"SHOW {name}").fetchone()[0]  # type: ignore[index]
    return found


def environment(command: str, dsn: str | None) -> Doc:
    """Everything needed to read the numbers later: when, where, with what."""
    now = clock.now()
    dirty = _git("status", "--porcelain", "--", "acta")
    return {
        "date": now.date().isoformat(),
        "started_at": now.isoformat(timespec="seconds"),
        "machine": machine(),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "sqlite": sqlite3.sqlite_version,
        "postgres": postgres_server(dsn) if dsn else None,
        "psycopg": _version("psycopg"),
        "psycopg_impl": psycopg.pq.__impl__,
        "psycopg_pool": _version("psycopg-pool"),
        "acta": {
            "version": acta.__version__,
            "commit": _git("rev-parse", "HEAD"),
            "uncommitted": [line[3:] for line in dirty.splitlines()],
        },
        "command": command,
    }


def slug(env: Doc) -> str:
    """``<date>-<cpu>-<cores>c``: the file name of a result."""
    cpu = re.sub(r"[^a-z0-9]+", "-", env["machine"]["cpu"].lower()).strip("-")
    return f"{env['date']}-{cpu[:40]}-{env['machine']['cores']}c"


def document(env: Doc, measurements: list[Measurement], load: Doc, method: Doc) -> Doc:
    return {
        "environment": env,
        "method": method,
        "load": load,
        "measurements": [m.to_json() for m in measurements],
    }


def write(doc: Doc, out: Path, name: str) -> tuple[Path, Path]:
    """Write ``name.json`` and ``name.md`` into ``out``; returns both paths."""
    out.mkdir(parents=True, exist_ok=True)
    json_path, md_path = out / f"{name}.json", out / f"{name}.md"
    json_path.write_text(json.dumps(doc, indent=2) + "\n")
    md_path.write_text(markdown(doc, json_path.name))
    return json_path, md_path


def save_page(doc: Doc, lines: list[str], out: Path, name: str) -> None:
    """A focused bench's record: ``doc`` as ``name.json`` and its page ``lines`` as
    ``name.md`` in ``out``; the page is printed too."""
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.json").write_text(json.dumps(doc, indent=1, default=str) + "\n")
    (out / f"{name}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def index(out: Path) -> None:
    """Rewrite the list of result files in ``out/README.md`` (if it has the markers)."""
    readme = out / "README.md"
    text = _read(str(readme))
    if INDEX_START not in text or INDEX_END not in text:
        return
    names = sorted((p for p in out.glob("*.md") if p.with_suffix(".json").exists()), reverse=True)
    lines = [f"- [{p.stem}]({p.name}) ([JSON]({p.with_suffix('.json').name}))" for p in names]
    head, rest = text.split(INDEX_START, 1)
    _, tail = rest.split(INDEX_END, 1)
    readme.write_text(head + INDEX_START + "\n" + "\n".join(lines) + "\n" + INDEX_END + tail)


# -- markdown ---------------------------------------------------------------------------------


def _n(value: float, digits: int = 0) -> str:
    return f"{value:,.{digits}f}"


def _spread(m: Doc, key: str, digits: int = 0) -> str:
    s = m["summary"][key]
    mark = " †" if m.get("others") else ""
    return f"{_n(s['median'], digits)} ({_n(s['min'], digits)}–{_n(s['max'], digits)}){mark}"


def _environment_table(env: Doc, load: Doc, ms: list[Doc]) -> list[str]:
    mach, pg, act = env["machine"], env["postgres"], env["acta"]
    rows = [
        ("Date", env["started_at"]),
        ("Machine", f"{mach['cpu']}, {mach['cores']} cores, {mach['ram_gib']} GiB RAM"),
        ("OS", f"{mach['os']}, kernel {mach['kernel']}"),
        ("Python", env["python"]),
        ("SQLite", env["sqlite"]),
    ]
    if pg:
        settings = ", ".join(f"{k}={v}" for k, v in pg.items() if k != "version")
        rows.append(("PostgreSQL", f"{pg['version']} ({settings})"))
    impl = env.get("psycopg_impl", "?")
    rows.append(
        ("psycopg", f"{env['psycopg']}, {impl} implementation (pool {env['psycopg_pool']})")
    )
    commit = f"{act['version']} at `{act['commit'][:12]}`"
    if act["uncommitted"]:
        commit += " plus uncommitted changes to " + ", ".join(f"`{f}`" for f in act["uncommitted"])
    rows.append(("acta", commit))
    if "acta_before" in load:
        same = load["acta_before"] == load.get("acta_after")
        state = "unchanged during the run" if same else "**CHANGED during the run**"
        rows.append(("acta source digest", f"`{load['acta_before']}` ({state})"))
    rows.append(("Load average (1/5/15 min)", f"before {load['before']}, after {load['after']}"))
    steal = max((m.get("steal", 0.0) for m in ms), default=0.0)
    rows.append(("CPU steal (worst measurement)", f"{steal:.1%}"))
    flushes = [m["disk"]["flush_ms"] for m in ms if m.get("disk", {}).get("flushes")]
    if flushes:
        span = f"{min(flushes):.3f}–{max(flushes):.3f} ms"
        rows.append(("Disk flush (fsync) latency, mean per measurement", span))
    rows.append(("Bench wall time", f"{load['wall_s']:.0f} s"))
    return ["| | |", "| --- | --- |", *[f"| {k} | {v} |" for k, v in rows]]


def _aims(ms: list[Doc]) -> list[str]:
    pg = [m for m in ms if m["provider"] == "postgres"]
    batch = [m for m in pg if m["name"] == "enqueue_batch"]
    drains = [m for m in pg if m["name"] == "drain" and m["params"]["processes"] == 1]
    notify = [m for m in pg if m["name"] == "pickup" and m["params"]["wake"] == "notify"]
    if not (batch and drains and notify):
        return []
    rows: list[tuple[str, str, Doc, str, float, bool]] = [
        ("batch enqueue", ">= 45,000 jobs/s", batch[0], "jobs_per_s", AIMS["enqueue_batch"], True)
    ]
    for profile in dict.fromkeys(m["params"].get("profile", "") for m in drains):
        mine = [m for m in drains if m["params"].get("profile", "") == profile]
        best = max(mine, key=lambda m: m["summary"]["jobs_per_s"]["median"])
        rows.append(("durable drain, 1 process", ">= 1,500 jobs/s", best, "jobs_per_s",
                     AIMS["drain_one_process"], True))  # fmt: skip
    for m in notify:
        rows.append(("pickup p50, NOTIFY", "< 5 ms", m, "p50_ms", AIMS["pickup_notify_p50"], False))
    out = ["| aim (PostgreSQL) | target | measured (median) | met |", "| --- | --- | --- | --- |"]
    for label, target, m, key, limit, higher in rows:
        value = m["summary"][key]["median"]
        met = value >= limit if higher else value < limit
        notes = []
        if m["name"] == "drain":
            notes.append(f"{m['params']['executors']} executors")
        if m["name"] != "enqueue_batch" and m["params"].get("profile"):
            notes.append(f"{m['params']['profile']} profile")
        where = f" ({', '.join(notes)})" if notes else ""
        shown = _n(value, 0 if higher else 2)
        out.append(f"| {label} | {target} | {shown}{where} | {'yes' if met else 'no'} |")
    return out


def _provider_section(provider: str, ms: list[Doc]) -> list[str]:
    title = {"postgres": "PostgreSQL", "sqlite": "SQLite"}[provider]
    out = [f"## {title}", ""]
    enq = [m for m in ms if m["name"].startswith("enqueue")]
    if enq:
        out += [
            "### Enqueue",
            "",
            "| mode | jobs | jobs/s | per unit |",
            "| --- | ---: | ---: | ---: |",
        ]
        for m in enq:
            if m["name"] == "enqueue_single":
                mode, unit = "single (`app.enqueue`)", f"{_spread(m, 'us_per_job')} µs/job"
            else:
                per = m["params"]["per_call"]
                mode = f"batch (`app.enqueue_batch`, {per:,} per call)"
                unit = f"{_spread(m, 'ms_per_call', 1)} ms/call"
            jobs = _n(m["params"]["jobs"])
            out.append(f"| {mode} | {jobs} | {_spread(m, 'jobs_per_s')} | {unit} |")
        out.append("")
    drains = [m for m in ms if m["name"] == "drain"]
    if drains:
        out += [
            "### Drain (zero-work async handlers, every state change committed)",
            "",
            "| processes | executors each | profile | backlog | jobs/s | µs/job | window s |",
            "| ---: | ---: | --- | ---: | ---: | ---: | ---: |",
        ]
        for m in drains:
            p = m["params"]
            out.append(
                f"| {p['processes']} | {p['executors']} | {p.get('profile', '')} | "
                f"{_n(p['jobs'])} | "
                f"{_spread(m, 'jobs_per_s')} | {_n(m['summary']['us_per_job']['median'])} | "
                f"{_n(m['summary']['window_s']['median'], 2)} |"
            )
        out.append("")
    picks = [m for m in ms if m["name"] == "pickup"]
    if picks:
        out += [
            "### Pickup latency (enqueue call start to handler start)",
            "",
            "| wake-up | worker | profile | samples | p50 ms | p95 ms | p99 ms | enqueue call |",
            "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |",
        ]
        for m in picks:
            p = m["params"]
            out.append(
                f"| {p['wake']} | {p['worker']} | {p.get('profile', '')} | {p['samples']} | "
                f"{_spread(m, 'p50_ms', 2)} | "
                f"{_spread(m, 'p95_ms', 2)} | {_spread(m, 'p99_ms', 2)} | "
                f"{_n(m['summary']['enqueue_call_p50_ms']['median'], 2)} |"
            )
        out.append("")
    return out + _gates_section(ms)


# What each gate benchmark shows, in the order the section lists them.
_GATES = {
    "gate_lane_single": "one lane (strictly one at a time)",
    "gate_lanes_round_robin": "many lanes, enqueued round-robin",
    "gate_unlaned": "the same jobs without lanes",
    "gate_hot_key": "one concurrency key, limit 1",
    "gate_meter": "a 50/s rate meter",
}


def _gates_section(ms: list[Doc]) -> list[str]:
    gated = {m["name"]: m for m in ms if m["name"] in _GATES}
    if not gated:
        return []
    out = [
        "### Gates (zero-work handlers; see anvil/gates.py)",
        "",
        "| case | jobs | rate | bounces per job |",
        "| --- | ---: | ---: | ---: |",
    ]
    for name, label in _GATES.items():
        m = gated.get(name)
        if m is None:
            continue
        p = m["params"]
        shown = f"{_spread(m, m['headline'], 2 if name == 'gate_meter' else 0)} {m['unit']}"
        jobs = _n(m["summary"]["jobs"]["median"])
        bounces = _n(m["summary"]["bounces_per_job"]["median"], 2)
        lanes = f", {p['lanes']:,} lanes" if "lanes" in p else ""
        out.append(f"| {label}{lanes} | {jobs} | {shown} | {bounces} |")
    laned, plain = gated.get("gate_lanes_round_robin"), gated.get("gate_unlaned")
    if laned and plain:
        # Runs alternate laned/unlaned: compare each laned run with the unlaned run after it.
        ratios = sorted(
            a["jobs_per_s"] / b["jobs_per_s"]
            for a, b in zip(laned["runs"], plain["runs"], strict=True)
        )
        ratio = ratios[len(ratios) // 2]
        met = "met" if ratio >= 0.8 else "not met"
        spread = f"{ratios[0]:.0%}-{ratios[-1]:.0%}"
        out += ["", f"Laned throughput is {ratio:.0%} of unlaned, median of the paired runs "
                f"({spread}; aim: at least 80%, {met})."]  # fmt: skip
    meter = gated.get("gate_meter")
    if meter:
        rate = meter["summary"]["starts_per_s"]["median"]
        off = abs(rate - 50) / 50
        met = "met" if off <= 0.02 else "not met"
        span = meter["summary"]["span_s"]["median"]
        out += [f"The meter sustained {rate:.2f} starts/s after its burst, over {span:.0f} s, "
                f"{off:.1%} from 50/s (aim: within 2%, {met})."]  # fmt: skip
    return [*out, ""]


def markdown(doc: Doc, json_name: str) -> str:
    env, ms, method = doc["environment"], doc["measurements"], doc["method"]
    mach = env["machine"]
    out = [
        f"# acta benchmarks: {env['date']}, {mach['cpu']} ({mach['cores']} cores)",
        "",
        f"Command: `{env['command']}`. All runs: [{json_name}]({json_name}).",
        "",
        *_environment_table(env, doc["load"], ms),
        "",
        f"Each cell: median of {method['runs']} runs after {method['warmups']} warm-up run(s), "
        "with (min–max). Every run uses a fresh ledger (schema or file). Method: "
        "[README](README.md). † marks a measurement during which another test run (pytest, "
        "nox) was seen on the machine.",
        "",
    ]
    aims = _aims(ms)
    if aims:
        out += ["## Against the aims", "", *aims, ""]
    for provider in ("postgres", "sqlite"):
        mine = [m for m in ms if m["provider"] == provider]
        if mine:
            out += _provider_section(provider, mine)
    return "\n".join(out).rstrip() + "\n"
