"""``python -m bgc``: the same entry point as the ``bgc`` console script."""

from bgc.app.launch import console

console()
