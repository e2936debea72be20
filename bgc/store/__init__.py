"""The kernel's state (docs/kernel.md, "The store")."""
