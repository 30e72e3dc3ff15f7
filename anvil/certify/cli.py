"""``python -m anvil certify``: run one certification and print where its record is.

Exit status 0 when every check held, 1 when one failed (the record names the offending rows;
the seed printed replays the same fault schedule), 2 on bad arguments.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

from anvil.certify.record import render
from anvil.certify.runner import Options, certify
from anvil.certify.tiers import TIERS


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m anvil certify",
        description="Chaos certification: real workers, seeded faults, checks from the ledger.",
    )
    p.add_argument("--provider", choices=("sqlite", "postgres"), default="sqlite")
    p.add_argument("--tier", choices=sorted(TIERS), default="A")
    p.add_argument("--seed", type=int, help="replay this fault schedule (default: random)")
    p.add_argument("--out", type=Path, default=Path("certification-records"))
    p.add_argument("--dsn", help="PostgreSQL server (default: local postgres@127.0.0.1/test)")
    p.add_argument("--jobs", type=int, help="override the tier's number of jobs")
    p.add_argument("--window", type=float, help="override the tier's window, in seconds")
    p.add_argument("--keep", action="store_true", help="keep the run's ledger afterwards")
    p.add_argument("--render", type=Path, help="only render this JSON record to markdown")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.render is not None:
        record = json.loads(args.render.read_text())
        args.render.with_suffix(".md").write_text(render(record))
        print(args.render.with_suffix(".md"))
        return 0
    if args.jobs is not None and args.jobs < 10:
        parser().error(f"--jobs must be at least 10 (one per workload), not {args.jobs}")
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1, 10**6)
    tier = TIERS[args.tier].scaled(jobs=args.jobs, window=args.window)
    print(f"certify: {args.provider}, Tier {tier.name}, {tier.jobs} jobs, seed {seed}", flush=True)
    options = Options(args.provider, tier, seed, args.out, dsn=args.dsn, keep=args.keep)
    options.progress = lambda text: print(text, flush=True)
    record, path = certify(options)
    summary = record["summary"]
    print(
        f"{'PASSED' if record['passed'] else 'FAILED'}: {summary}; "
        f"{len(record['faults'])} faults; record {path} (seed {seed})"
    )
    for check in record["checks"]:
        if check["violations"]:
            print(
                f"  {check['name']}: {check['violations']} violation(s), e.g. {check['rows'][:3]}"
            )
    return 0 if record["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
