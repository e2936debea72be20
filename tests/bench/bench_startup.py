"""Superseded by ``python tests/bench/run.py --only startup`` (kept because docs/ci.md names it).

Runs the startup section of the one benchmark entry point — cold ``bgc check``, ``bgc compile``
and ``bgc gate`` against ``python -c pass`` and importing bgc's five dependencies, in fresh
processes with private caches — and exits 1 when a target is missed, as this script did.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from run import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(["--only", "startup", "--strict", *sys.argv[1:]]))
