"""``python -m acta.cli``: the same command line as the ``acta`` console script."""

import sys

from acta.cli.main import main

sys.exit(main())
