"""The lab's live terminal view, and the interactive loop that serves it and the page.

Once a second the view is redrawn from ``Lab.state()`` (the ledger's rows and events, plus the
lab's own enqueue progress). Commands are typed as lines, so the view works in any terminal
and from a pipe:

    e N     enqueue N jobs (batched; the progress shows in the view)
    a       add a worker process
    k [PID] SIGKILL a worker (a random live one without PID)
    q       stop: shut every worker down gracefully and leave

Waiting is ``select`` on standard input with a one-second timeout, never a sleep.
"""

from __future__ import annotations

import select
import shutil
import sys
from typing import Any

from anvil.lab.bridge import mount_dashboard
from anvil.lab.control import Lab
from anvil.lab.page import Page

HELP = "commands: e N (enqueue N) · a (add worker) · k [PID] (SIGKILL) · q (stop and leave)"
CLEAR = "\x1b[H\x1b[2J"


def render(state: dict[str, Any], width: int = 100) -> str:
    """The view as text (no escape codes), from ``Lab.state()``."""
    e = state["enqueue"]
    lines = [
        f"Anvil lab · {state['provider']} · {state['schema']} · {state['at']}",
        "",
        f"  backlog   {state['backlog']:>12,}    ready {state['ready']:,}  "
        f"dispatched {state['dispatched']:,}",
        f"  executing {state['executing']:>12,}    succeeded {state['succeeded']:,}  "
        f"failed {state['failed']:,}",
        f"  jobs/s    {state['jobs_per_s']:>12,.0f}    (succeeded in the last 10 s, per second)",
        f"  enqueued  {e['written']:>12,} of {e['asked']:,}"
        + (f" in {e['seconds']:.1f} s" if e["asked"] else "")
        + (f"  ERROR {e['error']}" if e["error"] else ""),
        f"  kills sent {state['kills_sent']}, declared dead by recovery {state['workers_died']}, "
        f"jobs taken back by recovery {state['leases_lost']:,}",
        "",
        "  workers (ledger)   id      pid  status    heartbeat age  leases",
    ]
    for w in state["workers"][-12:]:
        lines.append(
            f"                   {w['id']:>3} {w['pid']:>8}  {w['status']:<8} "
            f"{w['heartbeat_age_s']:>10.1f} s  {w['leases']:>6}"
        )
    lines += ["", "  recent:"]
    lines += [f"    {line}"[:width] for line in (state["actions"] + state["feed"])[-10:]]
    return "\n".join(lines)


def command(lab: Lab, line: str) -> bool:
    """Carry out one typed command; False when the lab should end."""
    words = line.split()
    if not words:
        return True
    verb, rest = words[0].lower(), words[1:]
    try:
        if verb in ("q", "quit", "stop"):
            lab.stop()
            return False
        if verb in ("e", "enqueue") and len(rest) == 1:
            lab.enqueue(int(rest[0].replace(",", "").replace("_", "")))
        elif verb in ("a", "add") and not rest:
            lab.add_worker()
        elif verb in ("k", "kill") and len(rest) <= 1:
            if lab.kill_worker(int(rest[0]) if rest else None) is None:
                lab.note("no live worker to kill")
        else:
            lab.note(f"unknown command {line.strip()!r}; {HELP}")
    except ValueError as exc:
        lab.note(str(exc))
    return True


def run(lab: Lab, workers: int, jobs: int, port: int | None, *, show: bool = True) -> int:
    """The interactive lab: start ``workers``, enqueue ``jobs``, then view and obey commands
    until ``q``, a stop from the page, or end of input (then the lab keeps running only if the
    page serves it)."""
    page = Page(lab, port).start() if port is not None else None
    bridge = mount_dashboard(page, lab) if page is not None else None
    out = sys.stdout
    try:
        lab.start_workers(workers)
        if jobs:
            lab.enqueue(jobs)
        if page is not None:
            out.write(f"lab page at {page.url}\n")
            if bridge is not None:
                out.write(f"acta dashboard of the lab's ledger at {page.url}dashboard/\n")
            out.flush()
        reading = show  # typed commands go with the terminal view
        while not lab.stopped():
            lab.maintain()
            if show:
                width = shutil.get_terminal_size().columns
                out.write(CLEAR + render(lab.state(), width) + "\n\n" + HELP + "\n")
                if page is not None:
                    out.write(f"page: {page.url}\n")
                out.flush()
            if not reading:
                lab.wait_stopped(1.0)
                continue
            ready, _, _ = select.select([sys.stdin], [], [], 1.0)
            if ready:
                line = sys.stdin.readline()
                if not line:
                    reading = False  # end of input: keep viewing until Ctrl-C or the page stops
                elif not command(lab, line):
                    break
    finally:
        if page is not None:
            page.close()
        if bridge is not None:
            bridge.close()
    return 0
