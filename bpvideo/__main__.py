"""``python -m bpvideo``: the same as the ``bpvideo`` command."""

import sys

from bpvideo._cli import main

sys.exit(main())
