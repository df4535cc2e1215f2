"""`python -m collector.cli`: the `tracescore` command without its console script."""

import sys

from collector.cli._main import main

sys.exit(main())
