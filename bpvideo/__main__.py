"""``python -m bpvideo``: the same as the ``bpvideo`` command."""

import sys

from bpvideo.cli import main

sys.exit(main())
