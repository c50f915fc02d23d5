"""``python -m harness.cli``: the same as the ``toolcall-harness`` script."""

import sys

from harness.cli import main

sys.exit(main())
