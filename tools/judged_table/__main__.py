"""`python -m tools.judged_table` (the package's docstring)."""

import sys

from .command import main

sys.exit(main())
