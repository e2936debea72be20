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


log_app = typer.Typer(help="The decision ledger: show, verify, count per rule.", no_args_is_help=True)
app.add_typer(log_app, name="log")
LedgerStoreOption = Annotated[
    str, typer.Option("--store", metavar="STORE", help="A SQLite file, or a postgresql:// URL shared by a fleet.")
]


def _print_log(run) -> None:  # type: ignore[no-untyped-def]
    try:
        code, lines = run()
    except BgcError as error:
        fail(error)
    for line in lines:
        typer.echo(line)
    raise typer.Exit(code)


@log_app.command("show")
def log_show(
    store: LedgerStoreOption = ".bgc/kernel.db",
    output_format: Annotated[str, typer.Option("--format", metavar="FORMAT", help="text, json (one entry per line), or opa (OPA's decision-log shape).")] = "text",
    session: Annotated[Optional[str], typer.Option("--session", metavar="ID", help="Only this session's decisions.")] = None,
    rule: Annotated[Optional[str], typer.Option("--rule", metavar="FILE:LINE", help="Only decisions this rule made.")] = None,
    decision: Annotated[Optional[str], typer.Option("--decision", metavar="DECISION", help="Only allow, ask, deny, …")] = None,
    kind: Annotated[Optional[str], typer.Option("--kind", metavar="KIND", help="Only entries of this kind (hook, authorize, proxy, approve, …).")] = None,
    since: Annotated[Optional[str], typer.Option("--since", metavar="TIME", help="From this time (2026-11-30, …T12:00:00Z, or epoch seconds).")] = None,
    until: Annotated[Optional[str], typer.Option("--until", metavar="TIME", help="Up to this time, inclusive.")] = None,
    no_verify: Annotated[bool, typer.Option("--no-verify", help="Show entries even when the chain does not verify.")] = False,
) -> None:
    """Decisions recorded in the ledger, oldest first, one per line.

    Exit 0; 2 when the store cannot be read, or the chain does not verify (unless --no-verify).
    """
    from bgc.commands import log as command

    if output_format not in command.FORMATS:
        fail(UsageError(f"--format {output_format!r}: one of {', '.join(command.FORMATS)}"))
    _print_log(lambda: command.show(
        store, output_format=output_format, verify=not no_verify, session=session, rule=rule, decision=decision,
        kind=kind, since=since, until=until,
    ))  # fmt: skip


@log_app.command("verify")
def log_verify(
    store: LedgerStoreOption = ".bgc/kernel.db",
    expect_head: Annotated[Optional[str], typer.Option("--expect-head", metavar="DIGEST", help="Also require this head (kept elsewhere), which shows entries removed from the end.")] = None,
) -> None:
    """Check that no entry was edited, removed or reordered; print the head digest.

    Exit 0 when the chain holds, 1 when it does not (the first broken entry is named), 2 when
    the store cannot be read.
    """
    from bgc.commands import log as command

    _print_log(lambda: command.verify(store, expect_head))


@log_app.command("stats")
def log_stats(
    store: LedgerStoreOption = ".bgc/kernel.db",
    per_rule: Annotated[bool, typer.Option("--per-rule", help="Hits per deciding rule (the only statistic today).")] = True,
    policy: Annotated[Optional[str], typer.Option("--policy", "-p", metavar="FILE", help="List this policy's rules too, so rules that never fired show.")] = None,
    output_format: Annotated[str, typer.Option("--format", metavar="FORMAT", help="text or json.")] = "text",
    no_verify: Annotated[bool, typer.Option("--no-verify", help="Count even when the chain does not verify.")] = False,
) -> None:
    """How often each rule decided, by decision; with --policy, the rules that never fired.

    Exit 0; 2 when the store or policy cannot be read, or the chain does not verify.
    """
    from bgc.commands import log as command

    _print_log(lambda: command.stats(store, policy=policy, verify=not no_verify, output_format=output_format))


@app.command("pending")
def pending_requests(
    store: LedgerStoreOption = ".bgc/kernel.db",
    policy: PolicyOption = None,
    output_format: Annotated[str, typer.Option("--format", metavar="FORMAT", help="text or json (one request per line).")] = "text",
    everything: Annotated[bool, typer.Option("--all", help="Also answered, cancelled and expired requests still kept.")] = False,
) -> None:
    """Permission requests waiting for people: the call, what it needs, who may answer.

    Answers are counted with the policy's `trust approver` keys. Exit 0; 2 when the store or
    policy cannot be read.
    """
    from bgc.commands import approvals as command

    _print_log(lambda: command.pending(store, policy=policy, output_format=output_format, everything=everything))


def _answer(decision: str, request: str, key: str, approver: str | None, store: str, policy: str | None, suggest: bool) -> None:
    from bgc.commands import approvals as command

    _print_log(lambda: command.answer(store, request, decision, key_path=key, approver=approver, policy=policy, suggest=suggest))


KeyFileOption = Annotated[str, typer.Option("--key", metavar="FILE", help="Your private key (bgc key new NAME).")]
AsOption = Annotated[Optional[str], typer.Option("--as", metavar="NAME", help="Your approver name (default: the key file's name).")]


@app.command("approve")
def approve(
    request: Annotated[str, typer.Argument(metavar="REQUEST", help="A request id from bgc pending.")],
    key: KeyFileOption,
    approver: AsOption = None,
    store: LedgerStoreOption = ".bgc/kernel.db",
    policy: PolicyOption = None,
    suggest_rule: Annotated[bool, typer.Option("--suggest-rule", help="Also print the narrowest rule that would allow this call, to review for the policy.")] = False,
) -> None:
    """Allow one waiting call, once: a signature bound to that exact request.

    It never allows another call, a changed parameter or another plan; "always" is a policy
    edit (see --suggest-rule). Exit 0; 2 when the key is not trusted by the policy for you, or
    the request is unknown, cancelled or expired.
    """
    _answer("allow-once", request, key, approver, store, policy, suggest_rule)


@app.command("reject")
def reject(
    request: Annotated[str, typer.Argument(metavar="REQUEST", help="A request id from bgc pending.")],
    key: KeyFileOption,
    approver: AsOption = None,
    store: LedgerStoreOption = ".bgc/kernel.db",
    policy: PolicyOption = None,
) -> None:
    """Reject one waiting call: a rejection by any approver the rule names ends the request.

    Exit 0; 2 when the key is not trusted by the policy for you, or the request is unknown,
    cancelled or expired.
    """
    _answer("reject", request, key, approver, store, policy, False)


@app.command("cancel")
def cancel_request(
    request: Annotated[str, typer.Argument(metavar="REQUEST", help="A request id from bgc pending.")],
    store: LedgerStoreOption = ".bgc/kernel.db",
) -> None:
    """Cancel a waiting request (its turn or session is gone): answers after this do not count.

    Exit 0; 2 when the request is unknown.
    """
    from bgc.commands import approvals as command

    _print_log(lambda: command.cancel(store, request))


mode_app = typer.Typer(help="A session's mode: chosen by a person, signed, never by the agent.", no_args_is_help=True)
app.add_typer(mode_app, name="mode")


@mode_app.command("set")
def mode_set(
    session: Annotated[str, typer.Argument(metavar="SESSION", help="The agent session's id.")],
    mode: Annotated[str, typer.Argument(metavar="MODE", help="One of the policy's modes.")],
    key: KeyFileOption,
    approver: AsOption = None,
    store: LedgerStoreOption = ".bgc/kernel.db",
    policy: PolicyOption = None,
) -> None:
    """Switch a session to a mode: a signed decision of a person the policy trusts as an approver.

    Recorded in the store and the ledger. Exit 0; 2 when the key is not trusted for you or the
    policy has no such mode.
    """
    from bgc.commands import approvals as command

    _print_log(lambda: command.set_mode(store, session, mode, key_path=key, approver=approver, policy=policy))


@mode_app.command("show")
def mode_show(
    session: Annotated[str, typer.Argument(metavar="SESSION", help="The agent session's id.")],
    store: LedgerStoreOption = ".bgc/kernel.db",
    policy: PolicyOption = None,
) -> None:
    """The mode a person chose for a session (the newest validly signed choice), or the default.

    Exit 0; 2 when the store or policy cannot be read.
    """
    from bgc.commands import approvals as command

    _print_log(lambda: command.show_mode(store, session, policy=policy))


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


# ---- the kernel: keys, capability tokens, authorize, preflight (docs/kernel.md) ---------------

key_app = typer.Typer(help="Ed25519 key pairs for token issuers, approvers and the kernel.", no_args_is_help=True)
token_app = typer.Typer(help="Capability tokens: a plan's grants, signed; narrower tokens chained to them.", no_args_is_help=True)
app.add_typer(key_app, name="key")
app.add_typer(token_app, name="token")

KeyDirOption = Annotated[str, typer.Option("--dir", metavar="DIR", help="Where keys live (NAME.key, NAME.pub).")]
IssuerOption = Annotated[
    list[str], typer.Option("--issuer", metavar="KEY", help="Trust this issuer too: ed25519:..., a .pub/.key file or a key name (repeatable).")
]
TrustPolicyOption = Annotated[
    Optional[str], typer.Option("--policy", "-p", metavar="FILE", help="Policy whose `trust issuer` lines name the trusted issuers.")
]


def _run(work: typing.Callable[[], object]) -> NoReturn:
    """Run a kernel command: its text to stdout, its exit code; bad input is rendered once."""
    try:
        result = work()
    except BgcError as error:
        fail(error)
    if isinstance(result, tuple):
        text, code = result
        sys.stdout.write(text)
        raise typer.Exit(code)
    raise typer.Exit(result)


@key_app.command("new")
def key_new(name: Annotated[str, typer.Argument(help="The key's name (its file name).")], directory: KeyDirOption = ".bgc/keys") -> None:
    """Make an Ed25519 key pair: DIR/NAME.key (private, mode 600, never printed, never
    overwritten) and DIR/NAME.pub; print the public key.

    Exit 0 on success, 2 when the name is bad or a file exists (nothing is written then).
    """
    from bgc.commands import key

    _run(lambda: key.new(name, directory))


@key_app.command("show")
def key_show(key: Annotated[str, typer.Argument(help="A key name, a .key/.pub file, or ed25519:... text.")], directory: KeyDirOption = ".bgc/keys") -> None:
    """Print a public key as policies write it (`ed25519:<base64url>`); never the private key.

    Exit 0 on success, 2 on a missing or malformed key.
    """
    from bgc.commands import key as command

    _run(lambda: command.show(key, directory))


@token_app.command("issue")
def token_issue(
    plan: Annotated[str, typer.Argument(help="A plan file (bgc compile --format json|yaml|cbor), one plan.")],
    key: Annotated[str, typer.Option("--key", metavar="KEY", help="The issuer's private key: a name in .bgc/keys or a .key file.")],
    audience: Annotated[list[str], typer.Option("--audience", metavar="SERVER", help="A server id the token is for (repeatable, at least one).")],
    ttl: Annotated[str, typer.Option("--ttl", metavar="DURATION", help="Lifetime: 90s, 15m, 1h, 7d.")] = "1h",
    policy: Annotated[Optional[str], typer.Option("--policy", "-p", metavar="FILE", help="Refuse a plan not compiled against this policy (its id).")] = None,
    tool: Annotated[list[str], typer.Option("--tool", metavar="NAME", help="Scope the token to these of the plan's tool declarations (default: all of them).")] = [],  # noqa: B006
    require_nonce: Annotated[bool, typer.Option("--require-nonce", help="Every call needs an execution nonce from `bgc preflight`.")] = False,
    output: Annotated[Optional[str], typer.Option("--output", "-o", metavar="FILE", help="Write the token to a new file (mode 600).")] = None,
) -> None:
    """Sign a plan's grants into a capability token (base64url text; a bearer secret).

    Exit 0 on success, 2 on a bad plan, key, duration or a plan not compiled against --policy.
    """
    from bgc.commands import token as command

    _run(lambda: command.issue(plan, key, audience, ttl, policy=policy, tools=tool, require_nonce=require_nonce, output=output))


@token_app.command("show")
def token_show(
    token: Annotated[str, typer.Argument(help="A token file (- reads stdin).")],
    output_format: Annotated[Literal["text", "json"], typer.Option("--format", metavar="FORMAT", help="text or json.")] = "text",
) -> None:
    """Show every link of a token: plan, grants, tools, audience, validity. Verifies nothing.

    Exit 0, or 2 on a malformed token.
    """
    from bgc.commands import token as command

    _run(lambda: command.show(token, output_format))


@token_app.command("verify")
def token_verify(
    token: Annotated[str, typer.Argument(help="A token file (- reads stdin).")],
    policy: TrustPolicyOption = None,
    issuer: IssuerOption = [],  # noqa: B006
) -> None:
    """Verify a token's whole chain (signatures, trusted issuer, every attenuation proven
    narrower, the proof) and that it is valid now.

    Exit 0 when valid, 1 when not (the failed check is named), 2 on bad input.
    """
    from bgc.commands import token as command

    _run(lambda: command.verify(token, policy, issuer))


@token_app.command("attenuate")
def token_attenuate(
    token: Annotated[str, typer.Argument(help="The parent token file (- reads stdin).")],
    only: Annotated[list[str], typer.Option("--only", metavar="ATOM", help="Keep only these atoms (repeatable); each must lie inside the parent's grants.")] = [],  # noqa: B006
    audience: Annotated[list[str], typer.Option("--audience", metavar="SERVER", help="Keep only these servers.")] = [],  # noqa: B006
    tool: Annotated[list[str], typer.Option("--tool", metavar="NAME", help="Keep only these tools.")] = [],  # noqa: B006
    ttl: Annotated[Optional[str], typer.Option("--ttl", metavar="DURATION", help="A shorter lifetime from now.")] = None,
    require_nonce: Annotated[bool, typer.Option("--require-nonce", help="Require execution nonces from here on.")] = False,
    output: Annotated[Optional[str], typer.Option("--output", "-o", metavar="FILE", help="Write the child to a new file (mode 600).")] = None,
) -> None:
    """Make a narrower token chained to its parent, proven narrower with the pattern algebra.

    Whoever holds a token may narrow it (the token carries the secret that signs the next
    link); nobody holding the child can recover the parent. Exit 0 on success, 1 when the child
    would widen anything (the counterexample is printed), 2 on bad input.
    """
    from bgc.commands import token as command

    _run(lambda: command.attenuate(token, only, audience=audience, tools=tool, ttl=ttl, require_nonce=require_nonce, output=output))


KernelKeyOption = Annotated[Optional[str], typer.Option("--kernel-key", metavar="KEY", help="The kernel's private key: signs and checks execution nonces.")]
StoreOption = Annotated[str, typer.Option("--store", metavar="FILE", help="The kernel's SQLite store (consumed nonces).")]


@app.command("authorize")
def authorize_command(
    messages: Annotated[Optional[list[str]], typer.Argument(metavar="[MESSAGES]...", help="Files of AgentMessage JSON lines; stdin when none (or -).")] = None,
    policy: TrustPolicyOption = None,
    issuer: IssuerOption = [],  # noqa: B006
    kernel_key: KernelKeyOption = None,
    store: StoreOption = ".bgc/kernel.db",
    require_nonce: Annotated[bool, typer.Option("--require-nonce", help="Every ToolCallRequest needs an execution nonce.")] = False,
    token: Annotated[list[str], typer.Option("--token", metavar="FILE", help="The session's tokens, listed by ListCapabilities.")] = [],  # noqa: B006
    output_format: Annotated[Literal["json", "text"], typer.Option("--format", metavar="FORMAT", help="json (one object per line) or text.")] = "json",
) -> None:
    """Answer AgentMessage values (JSON lines, serde's externally tagged shape) with a decision,
    the reason and the check that decided, one line each, in order.

    Exit 0 when every message was allowed (or answered), 1 when any was refused, 2 on bad usage.
    """
    from bgc.commands import authorize as command

    _run(lambda: command.authorize(
        messages or [], policy=policy, issuer_keys=issuer, kernel_key=kernel_key, store=store,
        require_nonce=require_nonce, tokens=token, output_format=output_format,
    ))  # fmt: skip


@app.command("preflight")
def preflight_command(
    message: Annotated[str, typer.Argument(help="A file holding one ToolCallRequest JSON line (- reads stdin).")],
    kernel_key: Annotated[str, typer.Option("--kernel-key", metavar="KEY", help="The kernel's private key, which signs the nonce.")],
    policy: TrustPolicyOption = None,
    issuer: IssuerOption = [],  # noqa: B006
    store: StoreOption = ".bgc/kernel.db",
    nonce_only: Annotated[bool, typer.Option("--nonce-only", help="Print only the nonce, not the completed message.")] = False,
) -> None:
    """Strict execution preflight: check a ToolCallRequest as authorize would, then print it
    with an execution nonce bound to exactly this request (short-lived, usable once).

    Exit 0 with the nonce, 1 when the request would be refused (the check is named), 2 on bad input.
    """
    from bgc.commands import authorize as command

    _run(lambda: command.preflight(message, kernel_key=kernel_key, policy=policy, issuer_keys=issuer, store=store, nonce_only=nonce_only))


def main() -> None:
    """Run the typer app; :func:`bgc.launch.guarded` keeps every traceback from the user.

    The ``bgc`` script enters through :func:`bgc.launch.main`, which runs plain ``bgc check``
    without importing typer and hands everything else to this function.
    """
    from bgc.launch import guarded

    guarded(app)


if __name__ == "__main__":  # pragma: no cover
    main()
