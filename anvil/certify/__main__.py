"""``python -m anvil.certify``: the same as ``python -m anvil certify``."""

import sys

from anvil.certify.cli import main

sys.exit(main())
