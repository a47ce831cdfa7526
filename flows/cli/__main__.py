"""``python -m sdgov.flows.cli``: the ``sdgov`` command."""

import sys

from sdgov.flows.cli import main

sys.exit(main())
