"""``python -m bgc``: the same entry point as the ``bgc`` console script."""

from bgc.launch import console

console()
