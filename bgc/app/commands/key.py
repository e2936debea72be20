"""``bgc key new NAME`` and ``bgc key show NAME``: Ed25519 key pairs for issuers, approvers and
the kernel. The private half is written once (mode 0600) and never printed."""

from __future__ import annotations

import os

from bgc.app.commands.io import Result
from bgc.errors import ExitCode, UsageError

DEFAULT_DIR = os.path.join(".bgc", "keys")


def resolve(key: str, directory: str = DEFAULT_DIR, *, private: bool) -> str:
    """A key given as a file path, or as a name in ``directory`` (``NAME.key``/``NAME.pub``)."""
    if os.sep in key or key.endswith((".key", ".pub")) or os.path.exists(key):
        return key
    from bgc.runtime.kernel.keys import key_paths

    private_path, public_path = key_paths(key, directory)
    return str(private_path if private or not public_path.exists() else public_path)


def new(name: str, directory: str = DEFAULT_DIR) -> Result:
    from bgc.runtime.kernel.keys import key_paths, new_key

    key_paths(name, directory)  # the name is checked before anything is made
    if directory == DEFAULT_DIR and not os.path.isdir(directory):
        from bgc.core.values.files import make_directories

        make_directories(directory, mode=0o700)
    key = new_key(name, directory)
    private_path, public_path = key_paths(name, directory)
    return Result(
        ExitCode.OK,
        (
            f"{key.public.text}\n  private key: {private_path} (mode 600; keep it secret)\n  public key:  {public_path}\n"
        ).encode(),
    )


def show(key: str, directory: str = DEFAULT_DIR) -> Result:
    from bgc.runtime.kernel.keys import load_public

    if not key.startswith("ed25519:"):
        key = resolve(key, directory, private=False)
        if not os.path.exists(key):
            raise UsageError(f"no key {key!r} (make one with `bgc key new NAME`)")
    return Result(ExitCode.OK, (load_public(key).text + "\n").encode())
