"""``python -m anvil <command>``: ``certify`` runs a chaos certification (anvil/certify), ``lab``
the failure lab (anvil/lab). The benchmarks keep their own entry points (``python -m
anvil.bench``, ``python -m anvil.bench_peers``)."""

from __future__ import annotations

import importlib
import sys

COMMANDS = {"certify": "anvil.certify.cli", "lab": "anvil.lab.cli"}


def _lab(argv: list[str]) -> int:
    from anvil.lab.cli import interruptible
    from anvil.lab.cli import main as lab

    interruptible()
    try:
        return lab(argv)
    except KeyboardInterrupt as stop:
        print(f"interrupted ({stop}); workers stopped, ledger dropped", file=sys.stderr)
        return 130


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: python -m anvil <command> [options]; commands: " + ", ".join(COMMANDS))
        return 0 if argv else 2
    module = COMMANDS.get(argv[0])
    if module is None:
        print(f"no anvil command {argv[0]!r}; the commands are {', '.join(COMMANDS)}")
        return 2
    if argv[0] == "lab":
        return _lab(argv[1:])
    entry = importlib.import_module(module)
    result: int = entry.main(argv[1:])
    return result


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
