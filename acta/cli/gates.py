"""``acta gates``: look at the concurrency gates and rate meters of a namespace, and override a
limit or a rate on a running system.

Reads and changes go through the application's operator surface (``Acta.gates``/``meters``/
``set_concurrency_limit``/``set_rate_limit``), so the CLI sees and does exactly what code does.
A change is a compare-and-set on the gate's version: ``--expect-version`` is the version
``acta gates`` shows, and a stale one changes nothing and exits 1. Every value is checked
before the ledger is opened, so a malformed limit or rate is bad usage (exit 2) whatever the
database holds.
"""

from __future__ import annotations

import argparse
from typing import Any

from acta.app import Acta
from acta.cli import render
from acta.cli.command import EXIT_OK, HANDLER, CliError, cli_actor
from acta.cli.ledger import add_ledger_options, open_reader, resolve_ledger
from acta.errors import ConflictError
from acta.ledger.control import check_actor, check_reason
from acta.model.rows import GateInfo, MeterInfo
from acta.names import validate_job_name, validate_key
from acta.policy.gate import Rate, validate_concurrency_limit
from acta.policy.job import KEY_MAX

CLEAR = "clear"
# Options the parent `acta gates` also takes (see _keep_parent_values).
_SHARED = frozenset({"database", "app", "schema", "namespace", "json"})
_HOLDERS_SHOWN = 2


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``gates [list]|limit|rate`` to a subcommand set."""
    gates = commands.add_parser(
        "gates",
        help="list concurrency gates and rate meters; override a limit or a rate",
        description="Concurrency gates and rate meters of a namespace (`acta gates` lists them).",
    )
    _list_options(gates)
    gates.set_defaults(**{HANDLER: list_command})
    sub = gates.add_subparsers(title="commands", metavar="COMMAND")

    listing = sub.add_parser(
        "list",
        help="every concurrency gate and rate meter, with its version",
        description="List the namespace's concurrency gates (keys and job limits) and meters.",
    )
    _list_options(listing)
    _keep_parent_values(listing)
    listing.set_defaults(**{HANDLER: list_command})

    limit = sub.add_parser(
        "limit",
        help="override (or clear) the limit of a concurrency key or job",
        description="Set the concurrency limit in force for a key or a job name, or 'clear' "
        "the override so the declared limit applies again.",
    )
    target = limit.add_mutually_exclusive_group(required=True)
    target.add_argument("--key", help="a concurrency key, as given to enqueue")
    target.add_argument("--job", metavar="NAME", help="a job declaring concurrency_limit")
    limit.add_argument("value", metavar="N|clear", help="the new limit (1-100000), or clear")
    _change_options(limit)
    _keep_parent_values(limit)
    limit.set_defaults(**{HANDLER: limit_command})

    rate = sub.add_parser(
        "rate",
        help="override (or clear) the rate of a meter",
        description="Set the rate in force for a meter (its rate_key, or the job name), or "
        "'clear' the override so the declared rate applies again.",
    )
    rate.add_argument("meter", metavar="METER", help="the meter: a rate_key or a job name")
    rate.add_argument("value", metavar="RATE|clear", help="N/s, N/m or N/h (e.g. 10/s), or clear")
    _change_options(rate)
    _keep_parent_values(rate)
    rate.set_defaults(**{HANDLER: rate_command})


def _list_options(parser: argparse.ArgumentParser) -> None:
    _ledger_options(parser)
    parser.add_argument("--json", action="store_true", help="print JSON instead of tables")


def _change_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--expect-version",
        type=_version,
        required=True,
        metavar="V",
        help="the version `acta gates` shows (0 for a gate or meter never used)",
    )
    parser.add_argument("--reason", default=None, metavar="TEXT", help="recorded on the event")
    parser.add_argument("--actor", metavar="WHO", help="who; default cli:<login name>")
    _ledger_options(parser)


def _ledger_options(parser: argparse.ArgumentParser) -> None:
    add_ledger_options(parser)
    parser.add_argument(
        "--namespace",
        default=None,
        metavar="NAME",
        help="namespace of the gates (default: the app's, else default)",
    )


def _keep_parent_values(parser: argparse.ArgumentParser) -> None:
    """argparse copies every default of a subcommand over what its parent parsed, so
    ``acta gates --database x limit ...`` would lose ``--database``; a subcommand whose unset
    options stay out of its namespace keeps the parent's values (or the parent's defaults)."""
    for action in parser._actions:
        if action.dest in _SHARED:
            action.default = argparse.SUPPRESS


# -- commands --------------------------------------------------------------------------------


def list_command(args: argparse.Namespace, host_app: Acta | None) -> int:
    ledger = resolve_ledger(args, host_app)
    with open_reader(ledger, args.namespace) as reader:
        gates = reader.gates()
        meters = reader.meters()
        namespace = reader.namespace
    if args.json:
        print(
            render.dump(
                {
                    "namespace": namespace,
                    "gates": [gate_data(g) for g in gates],
                    "meters": [meter_data(m) for m in meters],
                }
            )
        )
        return EXIT_OK
    print(gates_text(gates, namespace))
    print()
    print(meters_text(meters, namespace))
    return EXIT_OK


def limit_command(args: argparse.Namespace, host_app: Acta | None) -> int:
    # Everything is checked before the ledger is opened (see the module docstring).
    key = None if args.key is None else validate_key(args.key, field="key", max_length=KEY_MAX)
    job = None if args.job is None else validate_job_name(args.job)
    limit = None if args.value == CLEAR else validate_concurrency_limit(_int(args.value), "limit")
    what = f"key {key!r}" if key is not None else f"job {job!r}"
    said = _said(args)
    ledger = resolve_ledger(args, host_app)
    with open_reader(ledger, args.namespace) as reader:
        version = _changed(
            lambda: reader.set_concurrency_limit(
                key=key, job=job, limit=limit, expected_version=args.expect_version, **said
            )
        )
    shown = "cleared (the declared limit applies)" if limit is None else f"set to {limit}"
    print(f"concurrency limit of {what} {shown}; version {version}")
    return EXIT_OK


def rate_command(args: argparse.Namespace, host_app: Acta | None) -> int:
    meter = validate_key(args.meter, field="meter", max_length=KEY_MAX)
    rate = None if args.value == CLEAR else str(Rate.parse(args.value, "rate"))
    said = _said(args)
    ledger = resolve_ledger(args, host_app)
    with open_reader(ledger, args.namespace) as reader:
        version = _changed(
            lambda: reader.set_rate_limit(meter, rate, expected_version=args.expect_version, **said)
        )
    shown = "cleared (the declared rate applies)" if rate is None else f"set to {rate}"
    print(f"rate of meter {meter!r} {shown}; version {version}")
    return EXIT_OK


def _said(args: argparse.Namespace) -> dict[str, str]:
    """The reason and actor the change's event records (checked before the ledger opens)."""
    said = {"actor": check_actor(cli_actor(args.actor))}
    if args.reason is not None:
        said["reason"] = check_reason(args.reason)
    return said


def _version(text: str) -> int:
    """argparse type for a gate's version: a whole number from 0."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(
            f"got {text!r}; expected the version `acta gates` shows, a whole number from 0"
        )
    return value


def _int(text: str) -> Any:
    # A non-number is passed on as text, so acta's own check names the rule in its message.
    try:
        return int(text)
    except ValueError:
        return text


def _changed(change: Any) -> int:
    try:
        version: int = change()
    except ConflictError as exc:
        raise CliError(f"{exc} (`acta gates` shows the current version)") from None
    return version


# -- output ----------------------------------------------------------------------------------


def gate_data(gate: GateInfo) -> dict[str, Any]:
    return {
        "kind": gate.kind,
        "name": gate.name,
        "limit": gate.limit,
        "declared_limit": gate.declared_limit,
        "override": gate.override,
        "held": gate.held,
        "holders": list(gate.holders),
        "version": gate.version,
    }


def meter_data(meter: MeterInfo) -> dict[str, Any]:
    return {
        "name": meter.name,
        "rate": meter.rate,
        "declared_rate": meter.declared_rate,
        "overridden": meter.overridden,
        "next_free_at": render.iso(meter.next_free_at),
        "version": meter.version,
    }


def gates_text(gates: list[GateInfo], namespace: str) -> str:
    if not gates:
        return f"no concurrency gates in namespace {namespace!r}"
    headers = ["KIND", "NAME", "LIMIT", "DECLARED", "OVERRIDE", "HELD", "VERSION", "HOLDERS"]
    rows = [
        [
            g.kind,
            g.name,
            str(g.limit),
            str(g.declared_limit),
            render.NONE if g.override is None else str(g.override),
            str(g.held),
            str(g.version),
            _holders(g.holders),
        ]
        for g in gates
    ]
    return f"Concurrency gates in namespace {namespace!r}\n" + render.table(headers, rows)


def meters_text(meters: list[MeterInfo], namespace: str) -> str:
    if not meters:
        return f"no rate meters in namespace {namespace!r}"
    headers = ["NAME", "RATE", "DECLARED", "OVERRIDDEN", "NEXT FREE", "VERSION"]
    rows = [
        [
            m.name,
            m.rate,
            m.declared_rate,
            "yes" if m.overridden else "no",
            render.when(m.next_free_at, millis=True),
            str(m.version),
        ]
        for m in meters
    ]
    return f"Rate meters in namespace {namespace!r}\n" + render.table(headers, rows)


def _holders(refs: tuple[str, ...]) -> str:
    if not refs:
        return render.NONE
    shown = ", ".join(refs[:_HOLDERS_SHOWN])
    more = len(refs) - _HOLDERS_SHOWN
    return shown if more <= 0 else f"{shown} (+{more} more)"
