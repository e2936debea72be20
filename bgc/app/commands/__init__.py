"""What each command does, apart from how its arguments arrive.

One module per command; each exposes ``run(...)`` (``order`` exposes ``new``) taking plain Python
values and returning a :class:`bgc.app.commands.io.Result`: the output, the exit code and the files to
write, which the adapter delivers (:func:`bgc.app.commands.io.deliver`). The two streaming commands,
``gate`` and ``match``, write each answer as it is decided (an enforcer reading line by line waits
for it) and return the exit code. Two argument adapters call them:
the typer app (:mod:`bgc.app.cli`: ``--help``, completion, every spelling) and the fast path
(:mod:`bgc.app.launch`: the plain forms of the hot commands, without importing typer, rich or
pydantic, because a hook runs ``bgc gate`` before every tool call). Errors are raised as
:class:`bgc.errors.BgcError` and rendered once, at the edge (:func:`bgc.app.guard.guarded`).
"""
