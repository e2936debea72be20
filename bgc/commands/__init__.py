"""What each command does, apart from how its arguments arrive.

One module per command; each exposes ``run(...)`` taking plain Python values and returning the
exit code, writing its output through :mod:`bgc.commands.io`. Two argument adapters call them:
the typer app (:mod:`bgc.cli`: ``--help``, completion, every spelling) and the fast path
(:mod:`bgc.launch`: the plain forms of the hot commands, without importing typer, rich or
pydantic, because a hook runs ``bgc gate`` before every tool call). Errors are raised as
:class:`bgc.errors.BgcError` and rendered once, at the edge (:func:`bgc.launch.guarded`).
"""
