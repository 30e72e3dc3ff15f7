"""Where the time goes, per job: py-spy on a worker draining a PostgreSQL backlog, and on a
producer's batch enqueue, plus the CPU the database backends spent meanwhile.

``python -m anvil.profile drain [--executors 16] [--jobs 20000]`` starts one worker process on
a fresh schema, attaches ``py-spy record`` to it, commits the backlog and stops sampling when it
is drained. ``python -m anvil.profile enqueue [--jobs 50000]`` runs ``enqueue_batch`` calls of
1,000 in a child process under py-spy. Each prints a markdown report: CPU per job of the Python
process and of its PostgreSQL backends (found by a unique ``application_name``, read from
``/proc``), and the Python samples grouped by where the sampled frame's code lives (acta
runtime, ledger verbs, provider, codec/shape, psycopg, asyncio, ...), with the top functions.

Needs ``py-spy`` on PATH (``pip install py-spy``) and permission to ptrace the child.
"""

from __future__ import annotations

import argparse
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

import psycopg

from anvil.bench_app import NOOP, build
from anvil.measure import DRAIN_POLL
from anvil.workload import REPO, Ledger, Target, clock, fresh_ledger, wait_for, workers

TICKS = os.sysconf("SC_CLK_TCK")
# (group, path fragment) in order: the first fragment found in a frame's file names its group.
GROUPS = [
    ("acta runtime (worker, executor, batcher)", "/acta/runtime/"),
    ("acta ledger verbs", "/acta/ledger/"),
    ("acta verb driver", "/acta/provider/verb.py"),
    ("acta provider (postgres)", "/acta/provider/"),
    ("acta codec and shape", "/acta/codec.py"),
    ("acta codec and shape", "/acta/shape.py"),
    ("acta ids, requests, app", "/acta/"),
    ("psycopg type adaptation", "/psycopg/types/"),
    ("psycopg pool", "/psycopg_pool/"),
    ("psycopg protocol and cursors", "/psycopg/"),
    ("asyncio event loop", "/asyncio/"),
    ("asyncio event loop", "/selectors.py"),
    ("logging", "/logging/"),
    ("bench app (handler, loop)", "/anvil/"),
]


def group_of(frame: str) -> str:
    for name, fragment in GROUPS:
        if fragment in frame:
            return name
    return "other (stdlib, dataclasses, ...)"


def cpu_seconds(pid: int) -> float:
    """User plus system CPU of one process so far (0 if it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICKS


def backends(dsn: str, application_name: str) -> list[int]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE application_name = %s", (application_name,)
        ).fetchall()
    return [int(pid) for (pid,) in rows]


def samples(raw: Path, must_contain: str = "") -> Counter[tuple[str, ...]]:
    """py-spy's raw output: one ``frame;frame;... count`` line per distinct stack."""
    stacks: Counter[tuple[str, ...]] = Counter()
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if stack and count.isdigit() and must_contain in stack:
            stacks[tuple(stack.split(";"))] += int(count)
    return stacks


def render(stacks: Counter[tuple[str, ...]], cpu_per_job_us: float, top: int = 20) -> str:
    total = sum(stacks.values()) or 1
    own: Counter[str] = Counter()
    groups: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    for stack, count in stacks.items():
        leaf = stack[-1]
        own[leaf] += count
        groups[group_of(leaf)] += count
        for frame in set(stack):
            if "/acta/" in frame:
                inclusive[frame] += count
    out = ["| where the sampled frame lives | share | µs CPU per job |", "| --- | ---: | ---: |"]
    for name, count in groups.most_common():
        share = count / total
        out.append(f"| {name} | {share:.1%} | {share * cpu_per_job_us:.0f} |")
    out += ["", f"Top {top} functions by own samples:", "", "| function | share |"]
    out += ["| --- | ---: |"]
    out += [f"| `{_short(f)}` | {c / total:.1%} |" for f, c in own.most_common(top)]
    out += ["", f"Top {top} acta functions including callees:", "", "| function | share |"]
    out += ["| --- | ---: |"]
    out += [f"| `{_short(f)}` | {c / total:.1%} |" for f, c in inclusive.most_common(top)]
    return "\n".join(out) + "\n"


def _short(frame: str) -> str:
    for marker in ("/site-packages/", "/lib/python3", str(REPO) + "/"):
        if marker in frame:
            head, _, tail = frame.partition(marker)
            name = head.rsplit("(", 1)[0].strip()
            return f"{name} ({tail.split('/', 1)[-1] if marker.startswith('/lib') else tail}"
    return frame


def spy_command(raw: Path, rate: int, *target: str) -> list[str]:
    """``py-spy record`` writing raw stacks to ``raw``; ``target``: ``--pid N`` or ``-- cmd``."""
    spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    args = [spy, "record", "--rate", str(rate), "--format", "raw", "--output", str(raw)]
    return [*args, "--full-filenames", "--function", "--gil", *target]


def profile_drain(dsn: str, jobs: int, executors: int, rate: int, raw: Path) -> str:
    name = f"anvil-profile-{secrets.token_hex(3)}"
    worker_dsn = f"{dsn}{'&' if '?' in dsn else '?'}application_name={name}"
    with fresh_ledger(Target("postgres", Path("."), dsn)) as ledger:
        mine = Ledger(ledger.target, worker_dsn, ledger.schema)
        with workers(mine, 1, executors=executors, listen=True, poll=DRAIN_POLL) as children:
            pid = children[0].process.pid
            spy = None
            if rate > 0:
                command = spy_command(raw, rate, "--pid", str(pid))
                spy = subprocess.Popen(command, stdout=subprocess.DEVNULL)
            app = ledger.app()
            backlog = [app.request(NOOP, i) for i in range(jobs)]
            before = {p: cpu_seconds(p) for p in backends(dsn, name)}
            worker_before, begun = cpu_seconds(pid), clock.monotonic()
            app.enqueue_batch(backlog)
            app.close()
            left = (
                "SELECT count(*) FROM {runtime} WHERE status < 100 AND definition_id = "
                "(SELECT id FROM {definitions} WHERE name = 'bench.noop')"
            )
            wait_for(children, lambda: ledger.sql(left)[0][0] == 0, 600, "draining")
            wall = clock.monotonic() - begun
            worker_cpu = cpu_seconds(pid) - worker_before
            database_cpu = sum(cpu_seconds(p) - before.get(p, 0.0) for p in backends(dsn, name))
            if spy is not None:
                spy.send_signal(signal.SIGINT)
                spy.wait(timeout=60)
    per_job = worker_cpu / jobs * 1e6
    head = [
        f"# Worker draining {jobs:,} jobs on PostgreSQL, {executors} executors, one process",
        "",
        f"- wall {wall:.2f} s, {jobs / wall:,.0f} jobs/s (py-spy sampling at {rate} Hz slows it)",
        f"- worker process CPU {worker_cpu:.2f} s = {per_job:.0f} µs per job",
        f"- its PostgreSQL backends' CPU {database_cpu:.2f} s = "
        f"{database_cpu / jobs * 1e6:.0f} µs per job",
        "",
    ]
    return "\n".join(head) + (render(samples(raw), per_job) if rate > 0 else "")


ENQUEUE_MARK = "anvil-enqueue-done"
ENQUEUE_CHILD = "import sys; from anvil.profile import enqueue_child; enqueue_child(*sys.argv[1:])"


def enqueue_child(database: str, schema: str, jobs: str) -> None:
    """The producer under py-spy: batch enqueues of 1,000 (after one warm-up call)."""
    app = build(database, schema)
    app.enqueue_batch([app.request(NOOP, i) for i in range(1000)])
    begun, pid = clock.monotonic(), os.getpid()
    cpu = cpu_seconds(pid)
    for first in range(0, int(jobs), 1000):
        app.enqueue_batch([app.request(NOOP, i) for i in range(first, first + 1000)])
    print(f"{ENQUEUE_MARK} {clock.monotonic() - begun} {cpu_seconds(pid) - cpu}", flush=True)
    app.close()


def profile_enqueue(dsn: str, jobs: int, rate: int, raw: Path) -> str:
    name = f"anvil-profile-{secrets.token_hex(3)}"
    producer_dsn = f"{dsn}{'&' if '?' in dsn else '?'}application_name={name}"
    with fresh_ledger(Target("postgres", Path("."), dsn)) as ledger:
        command = [sys.executable, "-c", ENQUEUE_CHILD, producer_dsn, ledger.schema, str(jobs)]
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        spy = subprocess.Popen(
            spy_command(raw, rate, "--", *command), stdout=subprocess.PIPE, env=env
        )
        out, _ = spy.communicate(timeout=600)
    [line] = [x for x in out.decode().splitlines() if x.startswith(ENQUEUE_MARK)]
    wall, cpu = (float(x) for x in line.split()[1:])
    per_job = cpu / jobs * 1e6
    head = [
        f"# Producer: {jobs:,} jobs in enqueue_batch calls of 1,000 on PostgreSQL",
        "",
        f"- wall {wall:.2f} s, {jobs / wall:,.0f} jobs/s (py-spy sampling at {rate} Hz)",
        f"- producer CPU {cpu:.2f} s = {per_job:.1f} µs per job (samples below: requests and "
        "the enqueue loop only)",
        "",
    ]
    return "\n".join(head) + render(samples(raw, "enqueue_child"), per_job)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m anvil.profile", description=__doc__)
    parser.add_argument("target", choices=("drain", "enqueue"))
    parser.add_argument("--dsn", default="postgresql://postgres@127.0.0.1:5432/test")
    parser.add_argument("--jobs", type=int)
    parser.add_argument("--executors", type=int, default=16)
    parser.add_argument(
        "--rate",
        type=int,
        default=250,
        help="py-spy samples per second (0: no py-spy, CPU figures only)",
    )
    parser.add_argument("--raw", type=Path, help="keep py-spy's raw stacks here")
    args = parser.parse_args(argv)
    raw = args.raw or Path(tempfile.mkdtemp(prefix="anvil-profile-")) / "stacks.txt"
    if args.target == "drain":
        print(profile_drain(args.dsn, args.jobs or 20_000, args.executors, args.rate, raw))
    else:
        print(profile_enqueue(args.dsn, args.jobs or 50_000, args.rate, raw))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
