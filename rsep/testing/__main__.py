"""``python -m rsep.testing w3c [DIALECT ...] [--quiet] | architecture``."""

import sys

from rsep.testing.command import main

sys.exit(main())
