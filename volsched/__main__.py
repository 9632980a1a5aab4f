"""``python -m volsched``: the same command line as ``volsched``."""

import sys

from volsched.cli import main

sys.exit(main())
