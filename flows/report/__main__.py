"""``python -m flows.report``: see :mod:`flows.report`."""

import sys

from flows.report import main

if __name__ == "__main__":
    sys.exit(main())
