"""``python -m sdgov.commands``: the ``sdgov`` command."""

import sys

from sdgov.commands import main

sys.exit(main())
