"""What each command does, apart from how its arguments arrive.

One module per command; each exposes ``run(...)`` (``order`` exposes ``new``) taking plain Python
values and returning a :class:`bgc.commands.io.Result`: the output, the exit code and the files to
write, which the adapter delivers (:func:`bgc.commands.io.deliver`). The two streaming commands,
``gate`` and ``match``, write each answer as it is decided (an enforcer reading line by line waits
for it) and return the exit code. Two argument adapters call them:
the typer app (:mod:`bgc.cli`: ``--help``, completion, every spelling) and the fast path
(:mod:`bgc.launch`: the plain forms of the hot commands, without importing typer, rich or
pydantic, because a hook runs ``bgc gate`` before every tool call). Errors are raised as
:class:`bgc.errors.BgcError` and rendered once, at the edge (:func:`bgc.launch.guarded`).
"""
