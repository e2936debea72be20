"""The ``bgc`` command line: a thin typer edge over the library.

Each command reads its inputs, calls one library stage, picks a renderer and returns an exit
code from :class:`bgc.errors.ExitCode`. Nothing here parses, compiles or decides: that lives
in the stage modules, so the same work is available as a library. Heavy imports happen inside
the commands, so ``bgc --help`` and the hot paths stay fast.
"""

from __future__ import annotations

import sys
import typing
from typing import TYPE_CHECKING, Annotated, Literal, NoReturn, Optional

import typer

from bgc import __version__
from bgc.errors import BgcError, ExitCode, UsageError

if TYPE_CHECKING:
    pass

app = typer.Typer(
    name="bgc",
    help="BoundGraph policy compiler: turn what an agent asks for into what it is granted.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode="markdown",
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"bgc {__version__}")
        raise typer.Exit(ExitCode.OK)


@app.callback()
def _root(
    version: Annotated[
        Optional[bool],
        typer.Option("--version", callback=_version, is_eager=True, help="Show the version and exit."),
    ] = None,
) -> None:
    """BoundGraph policy compiler: turn what an agent asks for into what it is granted.

    Exit codes, the same for every command: 0 everything granted / check passed,
    1 findings, 2 bad input or usage.
    """


def fail(error: BgcError) -> NoReturn:
    """Render ``error`` once on stderr and exit 2: the one place bad input leaves the program."""
    typer.echo(error.render(), err=True)
    raise typer.Exit(ExitCode.BAD_INPUT)


InputFormatOption = Annotated[
    Optional[Literal["yaml", "json", "cbor"]], typer.Option("--input-format", metavar="FORMAT", help="Format of a document read from - (stdin): yaml, json or cbor.")
]


@app.command()
def digest(
    files: Annotated[list[str], typer.Argument(help="Order files (.yaml/.yml/.json/.cbor); - reads stdin.")],
    output_format: Annotated[Literal["text", "json"], typer.Option("--format", metavar="FORMAT", help="text or json.")] = "text",
    input_format: InputFormatOption = None,
) -> None:
    """Print each work order's content id (sha256 of its canonical CBOR).

    The same order in YAML, JSON or CBOR has the same id; key order and whitespace never matter.
    Exit 0 on success, 2 on a file that is not a valid work order (nothing is printed then).
    """
    from bgc.documents import load_order

    try:
        ids = [(str(load_order(path, input_format).id()), path) for path in files]
    except BgcError as error:
        fail(error)
    if output_format == "json":
        import json

        typer.echo(json.dumps([{"file": path, "id": order_id} for order_id, path in ids], indent=2, sort_keys=True))
    else:
        from bgc.render.fields import escape_field

        for order_id, path in ids:
            typer.echo(f"{order_id}  {escape_field(path, backslash=False)}")


PolicyOption = Annotated[
    Optional[str], typer.Option("--policy", "-p", metavar="FILE", help="Policy file (.bgp); defaults to the configured one.")
]
ModeOption = Annotated[Optional[str], typer.Option("--mode", "-m", metavar="MODE", help="Mode to compile in (default: the policy's).")]


@app.command("compile")
def compile_command(
    orders: Annotated[list[str], typer.Argument(help="Work orders (.yaml/.yml/.json/.cbor); - reads stdin.")],
    policy: PolicyOption = None,
    mode: ModeOption = None,
    output_format: Annotated[
        Literal["text", "json", "yaml", "cbor", "sarif", "github"],
        typer.Option("--format", "-f", metavar="FORMAT", help="text (asked vs granted); json, yaml or cbor (the plans); sarif or github (findings)."),
    ] = "text",
    output: Annotated[Optional[str], typer.Option("--output", "-o", metavar="FILE", help="Write to FILE (atomically).")] = None,
    fail_on: Annotated[
        Literal["denied", "ask", "narrowed", "never"],
        typer.Option("--fail-on", metavar="LEVEL", help="Exit 1 at this level or worse: denied, ask, narrowed (anything not granted as asked) or never."),
    ] = "narrowed",
    input_format: InputFormatOption = None,
) -> None:
    """Compile work orders against a policy into granted plans; show asked vs granted.

    Exit 0 when everything was granted as asked and every call is covered, 1 otherwise
    (tune with --fail-on), 2 on bad input.
    """
    from bgc.commands import compile as command

    try:
        code = command.run(
            orders, policy=policy, mode=mode, output_format=output_format, output=output, fail_on=fail_on, input_format=input_format
        )
    except BgcError as error:
        fail(error)
    raise typer.Exit(code)


@app.command()
def explain(
    order: Annotated[str, typer.Argument(help="The work order.")],
    atom: Annotated[str, typer.Argument(help="A requested atom, resource:action:pattern.")],
    policy: PolicyOption = None,
    mode: ModeOption = None,
) -> None:
    """Show every rule that touched ATOM, in precedence order, and why the result is what it is.

    For an atom not granted in full, also say what every other mode would give: a person may
    switch modes; the proposal cannot. Exit 0 when the atom is granted as asked, 1 otherwise,
    2 on bad input.
    """
    from bgc.commands import io
    from bgc.compiler import Compiler
    from bgc.compiler import explain as explain_atom
    from bgc.documents import load_order
    from bgc.model import GrantAtom, ModelError
    from bgc.render import plans as render

    try:
        loaded, mode = io.load_policy(policy, mode)
        compiler = Compiler(loaded)
        work_order = load_order(order)
        try:
            requested = GrantAtom.parse(atom)
        except ModelError as error:
            raise UsageError(f"bad atom {atom!r}: {error.message}") from None
        explanation = explain_atom(compiler, work_order, requested, mode)
    except BgcError as error:
        fail(error)
    typer.echo(render.render_lines(render.explanation_lines(explanation), io.use_color(sys.stdout)), nl=False)
    raise typer.Exit(ExitCode.OK if explanation.result.verdict == "granted" else ExitCode.FINDINGS)


@app.command()
def gate(
    plan: Annotated[str, typer.Argument(help="A plan written by `bgc compile --format json|yaml|cbor`; - reads stdin.")],
    atoms: Annotated[Optional[list[str]], typer.Argument(help="Concrete atoms; read from stdin, one per line, when none.")] = None,
    root: Annotated[
        Optional[str],
        typer.Option("--root", metavar="DIR", help="Resolve symbolic links under DIR first; a link leaving DIR is denied."),
    ] = None,
    output_format: Annotated[Literal["text", "json"], typer.Option("--format", metavar="FORMAT", help="text, or json (one object per line).")] = "text",
    input_format: InputFormatOption = None,
    policy: Annotated[
        Optional[str],
        typer.Option("--policy", "-p", metavar="FILE", help="Refuse a plan not compiled against this policy (its id, as compile records it)."),
    ] = None,
    expect_plan: Annotated[
        Optional[list[str]],
        typer.Option("--expect-plan", metavar="ID", help="Refuse unless the plans read are exactly these ids; repeat for several plans."),
    ] = None,
    call: Annotated[
        bool,
        typer.Option("--call", help='Decide tool calls instead: JSON lines {"tool":…,"server":…,"params":{…}} on stdin, through the tool declarations the plan carries.'),
    ] = False,
) -> None:
    """Decide concrete atoms (or, with --call, tool calls) against a plan: allow, ask or deny, one line each.

    Atoms are concrete values, not patterns (`/src/*` is a file named `*`), normalised before
    deciding. Fields are tab-separated; backslashes, control characters and line separators in
    an echoed atom are backslash-escaped, so every atom gives exactly one line. A plan's id
    only proves it was not edited: pin it with --policy (the policy it must come from) or
    --expect-plan. Exit 0 if all were allowed, 1 otherwise, 2 on a bad or unpinned plan file,
    a bad --root or no atoms at all (nothing is decided then).
    """
    from bgc.commands import gate as command

    try:
        code = command.run(
            plan, atoms or (), root=root, output_format=output_format, input_format=input_format, policy=policy,
            expect_plan=expect_plan or (), call=call,
        )
    except BgcError as error:
        fail(error)
    raise typer.Exit(code)


@app.command()
def check(
    paths: Annotated[
        Optional[list[str]],
        typer.Argument(
            help="Policies (.bgp), test files (.bgt.yaml), work orders, directories. "
            "None: everything \\[tool.bgc] / bgc.toml configures."
        ),
    ] = None,
    output_format: Annotated[
        Literal["text", "json", "sarif", "github"], typer.Option("--format", metavar="FORMAT", help="text, json, sarif or github.")
    ] = "text",
    update: Annotated[
        bool, typer.Option("--update", help="Rewrite the recorded expectations of work orders (like snapshots).")
    ] = False,
    orders_only: Annotated[
        bool, typer.Option("--orders", help="Only compare work orders with their recordings (all configured ones).")
    ] = False,
) -> None:
    """Validate and lint policies, run their inline `expect`s and policy tests, and compare work
    orders with their recorded expectations.

    Exit 0 clean, 1 findings (lints, failing expects or tests, changed orders), 2 bad input.
    """
    from bgc.repository import run_command

    try:
        text, code = run_command(paths or [], output_format=output_format, update=update, orders_only=orders_only)
    except BgcError as error:
        fail(error)
    typer.echo(text, nl=False)
    raise typer.Exit(code)


@app.command("test")
def test_command(
    paths: Annotated[
        Optional[list[str]],
        typer.Argument(help="Test files (*.bgt.yaml), policies, directories. None: the configured tests."),
    ] = None,
    keyword: Annotated[
        Optional[str], typer.Option("-k", metavar="EXPR", help="Run only tests whose id matches: substrings with and/or/not.")
    ] = None,
    coverage: Annotated[bool, typer.Option("--coverage", help="List the rules no test exercised.")] = False,
    output_format: Annotated[
        Literal["text", "json", "sarif", "github", "junit"],
        typer.Option("--format", metavar="FORMAT", help="text, json, sarif, github or junit."),
    ] = "text",
    junit_xml: Annotated[Optional[str], typer.Option("--junit-xml", metavar="FILE", help="Also write a JUnit XML report to FILE.")] = None,
) -> None:
    """Run policy tests (*.bgt.yaml) and every policy's inline `expect`s; report like pytest.

    Exit 0 all passed, 1 a test failed, 2 bad input (a malformed test file, an unknown mode).
    """
    from bgc.testing import run_command

    try:
        text, code = run_command(
            paths or [], keyword=keyword, coverage=coverage, output_format=output_format, junit_xml=junit_xml
        )
    except BgcError as error:
        fail(error)
    typer.echo(text, nl=False)
    raise typer.Exit(code)


@app.command()
def fmt(
    files: Annotated[list[str], typer.Argument(help="Policy files (.bgp); - formats stdin to stdout.")],
    check_only: Annotated[bool, typer.Option("--check", help="Write nothing; exit 1 if a file would change.")] = False,
    diff: Annotated[bool, typer.Option("--diff", help="Write nothing; print what would change (exit 1 if any).")] = False,
    output_format: Annotated[
        Literal["text", "json", "sarif", "github"],
        typer.Option("--format", metavar="FORMAT", help="With --check: text, json, sarif or github."),
    ] = "text",
) -> None:
    """Rewrite policy files in the canonical layout, comments kept in place.

    Every file is parsed before any is written: if one does not parse, nothing is written.
    Exit 0 done (or nothing to change), 1 with --check/--diff when a file would change, 2 when a
    file does not parse.
    """
    from bgc.errors import InputError, Span
    from bgc.files import write_atomic
    from bgc.policy.format import format_file
    from bgc.render.fields import escape_field

    try:
        results = [format_file(path) for path in files]
    except BgcError as error:
        fail(error)
    changed = [result for result in results if result.changed]
    if output_format != "text":
        from bgc.config import repository_root
        from bgc.outcomes import RULES, unformatted_finding
        from bgc.render.machine import FORMATS, render

        if output_format not in FORMATS or not check_only:
            fail(UsageError(f"--format {output_format!r}: use json, sarif or github, with --check"))
        findings = [unformatted_finding(r.path, r.original, r.formatted) for r in changed]
        typer.echo(render(findings, output_format, root=repository_root(), descriptions=RULES), nl=False)
        raise typer.Exit(ExitCode.FINDINGS if changed else ExitCode.OK)
    if check_only or diff:
        for result in changed:
            shown = escape_field(result.path, backslash=False)
            typer.echo(result.diff() if diff else f"would reformat {shown}", nl=not diff)
        raise typer.Exit(ExitCode.FINDINGS if changed else ExitCode.OK)
    for result in results:
        if result.path == "-":
            typer.echo(result.formatted, nl=False)
        elif result.changed:
            try:
                write_atomic(result.path, result.formatted.encode("utf-8"))
            except OSError as error:
                fail(InputError(f"cannot write: {error.strerror}", Span(result.path)))
            typer.echo(f"reformatted {escape_field(result.path, backslash=False)}")
    raise typer.Exit(ExitCode.OK)


@app.command(
    "mcp-proxy",
    context_settings={"allow_interspersed_args": False},
    epilog="Example, in an MCP client's configuration: \"command\": \"bgc\", \"args\": [\"mcp-proxy\", \"-p\", \"policy.bgp\", \"--server\", \"github\", \"--\", \"npx\", \"-y\", \"@modelcontextprotocol/server-github\"]",
)
def mcp_proxy(
    command: Annotated[list[str], typer.Argument(metavar="-- COMMAND [ARGS]...", help="The MCP server to run behind the policy, after --.")],
    server: Annotated[str, typer.Option("--server", metavar="NAME", help="The server's name in the policy's `tool … on NAME` declarations.")],
    policy: Annotated[
        Optional[str], typer.Option("--policy", "-p", metavar="FILE", help="The policy (default: `policy` in [tool.bgc] or bgc.toml).")
    ] = None,
    mode: ModeOption = None,
    filter_tools: Annotated[
        bool, typer.Option("--filter-tools", help="Leave tools no declaration covers on this server out of tools/list answers.")
    ] = False,
) -> None:
    """Run an MCP server (stdio) behind the policy: every tools/call is decided before the server sees it.

    Allowed calls are forwarded unchanged; denied calls, and calls that need a person's approval,
    never reach the server: the client gets a tool error naming the rule. Lines bgc cannot read
    strictly (duplicate keys, batches, invalid JSON, over 4 MiB) are refused. Every other message
    passes through untouched. Exit: the server's status; 2 when the policy cannot be read (the
    server is not started); 127 when the server cannot be started.
    """
    from bgc.commands import mcp_proxy as proxy_command

    try:
        status = proxy_command.run(command, policy=policy, server=server, mode=mode, filter_tools=filter_tools)
    except BgcError as error:
        fail(error)
    raise typer.Exit(status)


init_app = typer.Typer(help="Set bgc up where agents run.", no_args_is_help=True)
app.add_typer(init_app, name="init")


@init_app.command("mcp")
def init_mcp(
    config: Annotated[str, typer.Argument(metavar="CONFIG", help="An MCP client configuration (.mcp.json, claude_desktop_config.json).")],
    policy: Annotated[str, typer.Option("--policy", "-p", metavar="FILE", help="The policy every server will run behind.")],
) -> None:
    """Run every stdio server of an MCP client's configuration through `bgc mcp-proxy`.

    Each server keeps its name (the NAME of `tool … on NAME` in the policy), command, arguments
    and environment; a server already behind the proxy is left alone. The original file is kept
    as CONFIG.bgc-backup. Exit 0 when every server is behind the proxy, 1 when a remote (url)
    server could not be (listed), 2 on a bad file (located; nothing written).
    """
    from bgc.commands import init_mcp as command

    try:
        code, summary = command.run(config, policy)
    except BgcError as error:
        fail(error)
    if summary:
        typer.echo(summary)
    raise typer.Exit(code)


@app.command("match")
def match_command(
    pattern: Annotated[str, typer.Argument(help="The pattern, in bgc's glob dialect (quote it for the shell).")],
    texts: Annotated[
        Optional[list[str]], typer.Argument(help="Texts to test. None given: read stdin, one per line.")
    ] = None,
    raw: Annotated[bool, typer.Option("--raw", help="Match each text exactly as given, without normalising.")] = False,
    resource: Annotated[
        Optional[str],
        typer.Option("--resource", "-r", metavar="R", help="Normalise texts as values of resource R (default: fs)."),
    ] = None,
) -> None:
    r"""Does my pattern cover this path? Test PATTERN against each TEXT.

    Texts are normalised first, as the gate does; by default as fs paths (`//` and `.` collapse).
    A text the gate rejects (relative path, `..` above `/`, control character, non-NFC) says why.

    Output, one tab-separated line per text: `match TEXT`, `no-match TEXT` or
    `rejected TEXT REASON`.

    Dialect (git wildmatch, case-sensitive): `*` and `?` never cross `/`; `a/**` is all below
    `a/`. Classes: `[abc]` `[a-z]` `[!a]` `[[:alpha:]]`; `\x` is a literal `x`. See
    docs/patterns.md.

    Examples:

    * `bgc match '/src/**/*.py' /src/a/b.py /src/../etc/passwd`
    * `git ls-files | sed 's|^|/repo/|' | bgc match '/repo/**/test_*'`
    * `bgc match --raw 'https://api.example.com/**' https://api.example.com/v1`

    Exit 0 when every text matched, 1 otherwise, 2 for a malformed pattern.
    """
    from bgc import glob, values
    from bgc.commands import io
    from bgc.names import ATOM_NAME
    from bgc.render.fields import escape_field

    if raw and resource is not None:
        fail(UsageError("--raw matches texts as given; it cannot be combined with --resource"))
    if resource is not None and not ATOM_NAME.fullmatch(resource):
        fail(UsageError(f"--resource {resource!r}: a resource name matches [a-z][a-z0-9_.-]*"))
    try:
        compiled = glob.parse(pattern)
    except glob.PatternError as error:
        fail(error)
    inputs: typing.Iterable[str] = texts if texts else io.stdin_lines()
    seen = 0
    all_matched = True
    for text in inputs:
        seen += 1
        verdict = values.match_value(compiled, text, None if raw else resource or "fs")
        shown = escape_field(text)
        if isinstance(verdict, values.Rejection):
            typer.echo(f"rejected\t{shown}\t{verdict.reason}")
        else:
            typer.echo(f"{'match' if verdict else 'no-match'}\t{shown}")
        all_matched &= verdict is True
    if not seen:
        fail(UsageError("no texts to match: give TEXT arguments or lines on stdin"))
    raise typer.Exit(ExitCode.OK if all_matched else ExitCode.FINDINGS)


def main() -> None:
    """Run the typer app; :func:`bgc.launch.guarded` keeps every traceback from the user.

    The ``bgc`` script enters through :func:`bgc.launch.main`, which runs plain ``bgc check``
    without importing typer and hands everything else to this function.
    """
    from bgc.launch import guarded

    guarded(app)


if __name__ == "__main__":  # pragma: no cover
    main()
