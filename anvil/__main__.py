"""``python -m anvil COMMAND``: the anvil commands that have a subcommand form.

``lab`` is the failure lab (anvil.lab). The benchmarks keep their own entry point,
``python -m anvil.bench``.
"""

from __future__ import annotations

import sys


def main(argv: list[str]) -> int:
    if argv[:1] == ["lab"]:
        from anvil.lab.cli import interruptible
        from anvil.lab.cli import main as lab

        interruptible()

        try:
            return lab(argv[1:])
        except KeyboardInterrupt as stop:
            print(f"interrupted ({stop}); workers stopped, ledger dropped", file=sys.stderr)
            return 130
    print("usage: python -m anvil lab [options]  (python -m anvil lab --help)", file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
