"""The ``acta`` command line: run workers, manage the schema, inspect jobs, take the tour.

``acta.cli.main:main`` is the console script. A host application can mount the same commands
in its own argparse CLI with ``add_commands`` and ``run`` (see ``acta.cli.main``), or build the
standalone parser with ``build_parser``.
"""

from acta.cli.main import add_commands, build_parser, main, run

__all__ = ["add_commands", "build_parser", "main", "run"]
