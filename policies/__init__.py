"""The bundled policies, shipped as data (`bgc init` copies them into a project)."""
