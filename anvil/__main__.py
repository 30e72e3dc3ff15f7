"""``python -m anvil <command>``: the lab's commands. ``certify`` runs a chaos certification
(anvil/certify); other commands belong to their own packages and are looked up by name."""

from __future__ import annotations

import importlib
import sys

COMMANDS = {"certify": "anvil.certify.cli"}


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: python -m anvil <command> [options]; commands: " + ", ".join(COMMANDS))
        return 0 if argv else 2
    module = COMMANDS.get(argv[0])
    if module is None:
        print(f"no anvil command {argv[0]!r}; the commands are {', '.join(COMMANDS)}")
        return 2
    entry = importlib.import_module(module)
    result: int = entry.main(argv[1:])
    return result


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
