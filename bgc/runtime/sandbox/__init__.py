"""A plan enforced by the operating system: the sandbox a confined command runs in."""
