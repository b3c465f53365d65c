"""``python -m flows.synth``: see :func:`flows.synth.cli.main`."""

import sys

from flows.synth.cli import main

if __name__ == "__main__":
    sys.exit(main())
