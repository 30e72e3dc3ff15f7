"""``acta definitions policy NAME``: show a job name's policy in force, or override it live.

With no change option it prints the override and its version. ``--max-attempts``,
``--backoff``, ``--timeout`` (``none`` for no timeout), ``--audit``, ``--retention``
(``forever`` to keep finished jobs) and ``--alerts`` set fields; ``--clear FIELD`` (repeatable,
or ``all``) drops them. Changes need ``--expect-version`` (the version shown; 0 before the
first). Everything goes through ``app.ops.policy``; malformed values are bad usage (exit 2),
a stale version or an unknown job exits 1 and changes nothing.
"""

from __future__ import annotations

import argparse
from typing import Any

from acta.app import Acta
from acta.cli import render
from acta.cli.command import EXIT_OK, HANDLER, CliError, UsageError
from acta.cli.ledger import add_ledger_options, open_reader, resolve_ledger
from acta.errors import ConflictError, UnknownJobError
from acta.names import validate_job_name
from acta.ops.policy import PolicyInForce
from acta.policy.override import FIELDS, normalize


def register(dsub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``policy`` to the ``acta definitions`` subcommands."""
    policy = dsub.add_parser(
        "policy",
        help="show or override a job name's policy on the running system",
        description="Show the policy override of a job name, or change it (picked up by "
        "workers at their next heartbeat).",
    )
    policy.add_argument("definition", metavar="NAME", help="the job name")
    policy.add_argument("--max-attempts", type=int, metavar="N")
    policy.add_argument("--backoff", metavar="EXPR", help="e.g. '1s..1h x2'")
    policy.add_argument("--timeout", metavar="DURATION|none")
    policy.add_argument("--audit", choices=("full", "failures", "off"))
    policy.add_argument("--retention", metavar="DURATION|forever")
    policy.add_argument("--alerts", choices=("terminal", "all", "off"))
    policy.add_argument(
        "--clear",
        action="append",
        metavar="FIELD",
        help=f"drop an override: {', '.join(FIELDS)}, or all",
    )
    policy.add_argument("--expect-version", type=int, metavar="V", help="needed to change it")
    policy.add_argument("--reason", default="changed by an operator", metavar="TEXT")
    policy.add_argument("--actor", default="operator", metavar="WHO")
    add_ledger_options(policy)
    policy.add_argument("--namespace", metavar="NAME", help="default: the app's, else default")
    policy.add_argument("--json", action="store_true", help="print JSON")
    policy.set_defaults(**{HANDLER: policy_command})


def _fields(args: argparse.Namespace) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    if args.max_attempts is not None:
        fields["max_attempts"] = args.max_attempts
    if args.backoff is not None:
        fields["backoff"] = args.backoff
    if args.timeout is not None:
        fields["timeout"] = None if args.timeout == "none" else args.timeout
    if args.audit is not None:
        fields["audit"] = args.audit
    if args.retention is not None:
        fields["retention"] = None if args.retention == "forever" else args.retention
    if args.alerts is not None:
        fields["alerts"] = args.alerts
    return fields


def policy_command(args: argparse.Namespace, host_app: Acta | None) -> int:
    name = validate_job_name(args.definition)
    fields, clearing = _fields(args), list(args.clear or [])
    if fields and clearing:
        raise UsageError("--clear goes alone: clear fields, or set them, in one command")
    if fields:
        normalize(fields)  # InvalidPolicyError (exit 2) before the ledger is opened
    if clearing == ["all"]:
        clearing = []
    elif any(field not in FIELDS for field in clearing):
        raise UsageError(f"--clear: one of {', '.join(FIELDS)}, or all")
    changing = bool(fields) or args.clear is not None
    if changing and args.expect_version is None:
        raise UsageError("--expect-version: the version `acta definitions policy NAME` shows")
    with open_reader(resolve_ledger(args, host_app), args.namespace) as reader:
        policy = reader.ops.policy
        try:
            if fields:
                found = policy.set(
                    name,
                    expected_version=args.expect_version,
                    reason=args.reason,
                    actor=args.actor,
                    **fields,
                )
            elif args.clear is not None:
                found = policy.clear(
                    name,
                    *clearing,
                    expected_version=args.expect_version,
                    reason=args.reason,
                    actor=args.actor,
                )
            else:
                found = policy.get(name)
        except (ConflictError, UnknownJobError) as exc:
            raise CliError(str(exc)) from None
    _print(found, args.json)
    return EXIT_OK


def _print(found: PolicyInForce, as_json: bool) -> None:
    if as_json:
        print(
            render.dump(
                {"job": found.job_name, "overrides": found.overrides, "version": found.version}
            )
        )
        return
    shown = ", ".join(f"{k}={v}" for k, v in sorted(found.overrides.items())) or "none"
    print(f"{found.job_name}: overrides {shown}; version {found.version}")
