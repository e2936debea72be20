"""Writing files so that a failure never leaves one half-written."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_atomic(path: str | Path, data: bytes) -> None:
    """Write ``data`` to a temporary file beside the target, then rename it into place.

    The rename is atomic on POSIX, so readers see the old content or the new, never a mix, and
    an error (disk full, interrupt) leaves the old file untouched. A symlink is written
    *through*: the file it points to gets the new content (and keeps its permissions) and the
    link stays a link; renaming over the link itself would replace it by a regular file and
    leave its target as it was.
    """
    target = Path(os.path.realpath(path))
    handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
        if target.exists():
            os.chmod(temporary, target.stat().st_mode & 0o777)
        else:
            os.chmod(temporary, 0o644)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
