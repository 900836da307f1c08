"""``python -m rsep.testing w3c [DIALECT ...] [--quiet] | rsp4j [--manifest FILE] | csrbench [READING ...] | architecture``."""

import sys

from rsep.testing.command import main

sys.exit(main())
