"""``python -m flows.synth``: see :func:`flows.synth.cli.main`."""

import sys

from flows.synth.cli import main

sys.exit(main())
