"""Superseded by ``python tests/bench/run.py --only startup`` (kept because docs/ci.md names it).

Runs the startup section of the one benchmark entry point — the served hook against
``python -c pass``; cold ``bgc gate``, ``bgc compile`` and ``bgc check`` against importing bgc's
five dependencies; fresh processes with private caches, paired with their yardsticks — and exits
1 when a bar is missed, as this script did.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from run import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(["--only", "startup", "--strict", *sys.argv[1:]]))
