"""The ``bgc`` command line: a thin typer edge over the library.

Each command here only adapts its arguments: it calls its module in :mod:`bgc.app.commands` and
delivers what that returns (:func:`run`). Nothing here parses, compiles, decides or renders:
that lives in the command modules and the stages below them, so the same work is available as
a library and through the typer-free fast path (:mod:`bgc.app.launch`). Command modules are
imported inside the commands, so ``bgc --help`` stays fast.
"""

from __future__ import annotations

from typing import Annotated, Literal, Optional

import typer

from bgc.adapters.agents import AGENTS, Agent
from bgc.app.cli_base import ColorOption, InputFormatOption, PolicyOption, QuietOption, app, command_group, fail, run
from bgc.errors import BgcError, UsageError

AgentName = Literal[tuple(AGENTS)]  # type: ignore[valid-type]
"""The agents ``bgc hook`` and ``bgc init`` know (:data:`bgc.adapters.agents.AGENTS`)."""
AGENT_NAMES = ", ".join(AGENTS)


@app.command()
def digest(
    files: Annotated[list[str], typer.Argument(metavar="ORDER...", help="Order files (.yaml/.yml/.json/.cbor); - reads stdin.")],
    output_format: Annotated[Literal["text", "json"], typer.Option("--format", metavar="FORMAT", help="text or json.")] = "text",
    input_format: InputFormatOption = None,
) -> None:
    """Print each work order's content id (sha256 of its canonical CBOR).

    The same order in YAML, JSON or CBOR has the same id; key order and whitespace never matter.
    Exit 0 on success, 2 on a file that is not a valid work order (nothing is printed then).
    """
    from bgc.app.commands import digest as command

    run(lambda: command.run(files, output_format=output_format, input_format=input_format))


ModeOption = Annotated[Optional[str], typer.Option("--mode", "-m", metavar="MODE", help="Mode to compile in (default: the policy's).")]


LedgerOption = Annotated[
    Optional[str],
    typer.Option("--ledger", metavar="STORE", help="Also append every decision to the ledger in STORE (a SQLite file or a postgresql:// URL)."),
]


@app.command("compile")
def compile_command(
    orders: Annotated[list[str], typer.Argument(metavar="ORDER...", help="Work orders (.yaml/.yml/.json/.cbor); - reads stdin.")],
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
    quiet: QuietOption = False,
    color: ColorOption = "auto",
    ledger: LedgerOption = None,
) -> None:
    """Compile work orders against a policy into granted plans; show asked vs granted.

    Exit 0 when everything was granted as asked and every call is covered, 1 otherwise
    (tune with --fail-on), 2 on bad input.
    """
    from bgc.app.commands import compile as command

    run(lambda: command.run(
        orders, policy=policy, mode=mode, output_format=output_format, output=output, fail_on=fail_on,
        input_format=input_format, quiet=quiet, color_choice=color, ledger=ledger,
    ))


@app.command()
def explain(
    arguments: Annotated[
        list[str],
        typer.Argument(metavar="[ORDER] ATOM...", help="Atoms (resource:action:pattern), optionally after the work order they are asked in (- reads it from stdin)."),
    ],
    policy: PolicyOption = None,
    mode: ModeOption = None,
    input_format: InputFormatOption = None,
    output_format: Annotated[Literal["text", "json"], typer.Option("--format", metavar="FORMAT", help="text, or json (one object: an entry per atom).")] = "text",
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print only the results, not the rules that led to them.")] = False,
    color: ColorOption = "auto",
) -> None:
    """Show every rule that touched each ATOM, in precedence order, and why the result is what it is.

    No order is needed: `bgc explain -p policy.bgp fs:write:/src/a.py proc:exec:pytest` says
    what the policy does with each atom (no condition field known, as for an `expect` without
    `when`); an ORDER first asks them in its context. For an atom not granted in full, also say
    what every other mode would give (a person may switch modes; the proposal cannot), and for a
    value no rule takes, the nearest rule and why it did not. Exit 0 when every atom is granted
    as asked, 1 otherwise, 2 on bad input.
    """
    from bgc.app.commands import explain as command

    run(lambda: command.run(arguments, policy=policy, mode=mode, input_format=input_format, output_format=output_format,
                              quiet=quiet, color_choice=color))


@app.command()
def gate(
    plan: Annotated[str, typer.Argument(metavar="PLAN", help="A plan written by `bgc compile --format json|yaml|cbor`; - reads stdin.")],
    atoms: Annotated[Optional[list[str]], typer.Argument(metavar="[ATOM]...", help="Concrete atoms; read from stdin, one per line, when none.")] = None,
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
    quiet: QuietOption = False,
    color: ColorOption = "auto",
    call: Annotated[
        bool,
        typer.Option("--call", help='Decide tool calls instead: JSON lines {"tool":…,"server":…,"params":{…}} on stdin, through the tool declarations the plan carries.'),
    ] = False,
    ledger: LedgerOption = None,
) -> None:
    """Decide concrete atoms (or, with --call, tool calls) against a plan: allow, ask or deny, one line each.

    Atoms are concrete values, not patterns (`/src/*` is a file named `*`), normalised before
    deciding. Fields are tab-separated; backslashes, control characters and line separators in
    an echoed atom are backslash-escaped, so every atom gives exactly one line. A plan's id
    only proves it was not edited: pin it with --policy (the policy it must come from) or
    --expect-plan. Exit 0 if all were allowed, 3 if some await approval and none is denied,
    4 if any is denied; 2 on a bad or unpinned plan file, a bad --root or no atoms at all
    (nothing is decided then).
    """
    from bgc.app.commands import gate as command

    run(lambda: command.run(
        plan, atoms or (), root=root, output_format=output_format, input_format=input_format, policy=policy,
        expect_plan=expect_plan or (), quiet=quiet, color_choice=color, call=call, ledger=ledger,
    ))


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
    baseline: Annotated[
        Optional[str],
        typer.Option("--baseline", metavar="REV", help="Also diff every policy against git revision REV: new access is a finding (bgc diff)."),
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print only the findings, no per-file or closing summary.")] = False,
    color: ColorOption = "auto",
    select: Annotated[
        Optional[list[str]],
        typer.Option("--select", metavar="CODES", help="Report only these lints: codes or prefixes, comma-separated (BGC1, BGC103, ALL); replaces the configured `select`."),
    ] = None,
    ignore: Annotated[
        Optional[list[str]],
        typer.Option("--ignore", metavar="CODES", help="Leave out these lints: codes or prefixes, comma-separated; the more specific of --select and --ignore wins."),
    ] = None,
) -> None:
    """Validate and lint policies, run their inline `expect`s and policy tests, and compare work
    orders with their recorded expectations.

    A lint is silenced on one line by `# bgc: ignore[BGC101]` at its end. Exit 0 clean, 1
    findings (lints, failing expects or tests, changed orders), 2 bad input.
    """
    from bgc.app.commands import check as command

    run(lambda: command.run(paths or [], output_format=output_format, update=update, orders_only=orders_only, baseline=baseline,
                              quiet=quiet, color_choice=color, select=select, ignore=ignore))


@app.command("diff")
def diff_command(
    policies: Annotated[
        Optional[list[str]],
        typer.Argument(metavar="OLD NEW", help="Two policies: files or git:REV:path. With --against: the policies to compare (default: the configured ones)."),
    ] = None,
    against_revision: Annotated[
        Optional[str], typer.Option("--against", metavar="REV", help="Compare each policy with its version at git revision REV (HEAD, origin/main, a merge base).")
    ] = None,
    mode: Annotated[Optional[str], typer.Option("--mode", "-m", metavar="MODE", help="Compare only this mode (default: every mode and the default one).")] = None,
    output_format: Annotated[
        Literal["text", "json", "sarif", "github"], typer.Option("--format", "-f", metavar="FORMAT", help="text, json, sarif or github.")
    ] = "text",
    fail_on: Annotated[
        Literal["new", "removed", "never"],
        typer.Option("--fail-on", metavar="WHAT", help="Exit 1 on: new (new access, the default), removed (new or removed access) or never."),
    ] = "new",
    equivalent: Annotated[bool, typer.Option("--equivalent", help="Exit 1 unless the policies are identical in effect.")] = False,
    output: Annotated[Optional[str], typer.Option("--output", "-o", metavar="FILE", help="Write to FILE (atomically).")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print only the differences, no section titles or summary.")] = False,
    color: ColorOption = "auto",
) -> None:
    """What NEW allows that OLD did not, exactly: each difference as a pattern with its except
    list, a shortest counterexample and the rules on both sides responsible.

    Every resource/action either policy mentions, in every mode and every context its conditions
    tell apart. Examples: `bgc diff git:HEAD:policies/main.bgp policies/main.bgp`,
    `bgc diff --against origin/main`. Exit 0 when NEW grants nothing new, 1 when it does
    (--fail-on removed: also on removals; --equivalent: on any difference), 2 on bad input.
    """
    from bgc.app.commands import diff as command

    run(lambda: command.run(
        policies or [], against_revision=against_revision, mode=mode, output_format=output_format,
        fail_on=fail_on, equivalent=equivalent, output=output, quiet=quiet, color_choice=color,
    ))  # fmt: skip


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
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print only the failures (and, with --coverage, the rules not exercised).")] = False,
    color: ColorOption = "auto",
) -> None:
    """Run policy tests (*.bgt.yaml) and every policy's inline `expect`s; report like pytest.

    Exit 0 all passed, 1 a test failed, 2 bad input (a malformed test file, an unknown mode).
    """
    from bgc.app.commands import test as command

    run(lambda: command.run(
        paths or [], keyword=keyword, coverage=coverage, output_format=output_format, junit_xml=junit_xml, quiet=quiet,
        color_choice=color,
    ))


@app.command()
def fmt(
    files: Annotated[
        Optional[list[str]],
        typer.Argument(
            metavar="[PATH]...",
            help="Policy files, directories (every .bgp below) or - (stdin to stdout). "
            "None: the configured policies (\\[tool.bgc] / bgc.toml).",
        ),
    ] = None,
    check_only: Annotated[bool, typer.Option("--check", help="Write nothing; exit 1 if a file would change.")] = False,
    diff: Annotated[bool, typer.Option("--diff", help="Write nothing; print what would change (exit 1 if any).")] = False,
    output_format: Annotated[
        Literal["text", "json", "sarif", "github"],
        typer.Option("--format", metavar="FORMAT", help="With --check: text, json, sarif or github."),
    ] = "text",
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Do not name the files reformatted (or that would be).")] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Also name the files left unchanged.")] = False,
    color: ColorOption = "auto",
) -> None:
    """Rewrite policy files in the canonical layout, comments kept in place.

    Every file is parsed before any is written: if one does not parse, nothing is written. Each
    file keeps its line endings (CRLF stays CRLF). Exit 0 done (or nothing to change), 1 with
    --check/--diff when a file would change, 2 when a file does not parse.
    """
    from bgc.app.commands import fmt as command

    run(lambda: command.run(
        files or [], check=check_only, diff=diff, output_format=output_format, quiet=quiet, verbose=verbose,
        color_choice=color,
    ))


@app.command(
    "mcp-proxy",
    context_settings={"allow_interspersed_args": False},
    epilog="Example, in an MCP client's configuration: \"command\": \"bgc\", \"args\": [\"mcp-proxy\", \"-p\", \"policy.bgp\", \"--server\", \"github\", \"--\", \"npx\", \"-y\", \"@modelcontextprotocol/server-github\"]",
)
def mcp_proxy(
    command: Annotated[Optional[list[str]], typer.Argument(metavar="-- COMMAND [ARGS]...", help="The MCP server to run behind the policy, after -- (or --url).")] = None,
    *,
    server: Annotated[Optional[str], typer.Option("--server", metavar="NAME", help="The server's name in the policy's `tool … on NAME` declarations (required, unless --gateway).")] = None,
    policy: Annotated[
        Optional[str], typer.Option("--policy", "-p", metavar="FILE", help="The policy (default: `policy` in [tool.bgc] or bgc.toml).")
    ] = None,
    mode: ModeOption = None,
    filter_tools: Annotated[
        bool, typer.Option("--filter-tools", help="Leave tools no declaration covers on this server out of tools/list answers.")
    ] = False,
    store: Annotated[str, typer.Option("--store", metavar="STORE", help="Where asks wait for approval and decisions are recorded: a SQLite file or a postgresql:// URL; `none`: neither.")] = ".bgc/kernel.db",
    wait: Annotated[float, typer.Option("--wait", metavar="SECONDS", help="Hold a call that needs approval this long for `bgc approve` (0: refuse it at once).")] = 0.0,
    url: Annotated[Optional[str], typer.Option("--url", metavar="URL", help="A remote server (Streamable HTTP) instead of a command.")] = None,
    bearer_env: Annotated[Optional[str], typer.Option("--bearer-env", metavar="VAR", help="Send the remote server the token in environment variable VAR (Authorization: Bearer).")] = None,
    timeout: Annotated[Optional[float], typer.Option("--timeout", metavar="SECONDS", help="How long one network operation with the remote server may take (default 300).")] = None,
    listen: Annotated[Optional[str], typer.Option("--listen", metavar="HOST:PORT", help="Serve clients over Streamable HTTP on this loopback address (port 0: any free one) instead of stdio.")] = None,
    token_file: Annotated[str, typer.Option("--token-file", metavar="FILE", help="Where --listen writes its per-start token (mode 0600); clients send it as the Bgc-Token header.")] = ".bgc/mcp-proxy.token",
    allow_origin: Annotated[Optional[list[str]], typer.Option("--allow-origin", metavar="ORIGIN", help="A browser origin --listen accepts (none by default: a request with any Origin is refused).")] = None,
    closed: Annotated[bool, typer.Option("--closed", help="Refuse resources/read, prompts/get, completions, sampling and elicitation that no rule names (default: they pass, as before).")] = False,
    redact: Annotated[bool, typer.Option("--redact", help="Replace credentials of known formats (keys, tokens) in what the server sends before the client sees them; each redaction is recorded.")] = False,
    gateway: Annotated[Optional[str], typer.Option("--gateway", metavar="FILE", help="Serve every server FILE lists (JSON: {\"servers\": {NAME: {command, args | url, bearerEnv, policy, mode, closed, redact, filterTools}}}) at /mcp/NAME behind one --listen front, each under its own policy.")] = None,
) -> None:
    """Run an MCP server (stdio, or remote with --url) behind the policy: every tools/call is decided before the server sees it.

    Allowed calls are forwarded as decided (re-serialised); denied calls never reach the server: the client gets a
    tool error naming the rule. A call that needs approval is a permission request (`bgc pending`,
    `bgc approve`), held up to --wait seconds, then refused with its id; where the policy says
    `trust elicitation`, an ask anyone may answer is also put to the person at the client. Every decision is recorded
    in the ledger. Lines bgc cannot read strictly (a carriage return, duplicate keys, batches,
    invalid JSON, over 4 MiB) are refused. Every other message passes through, re-serialised.
    SIGTERM, SIGINT and SIGHUP are passed to the server. With --listen, clients connect over
    Streamable HTTP (each session its own server session); SIGTERM, SIGINT and SIGHUP stop it. With
    --gateway, one front serves several servers, each at /mcp/NAME under its own policy.
    Exit: the server's status (0 for --url and --listen); 2 when the policy or the store cannot be
    read (the server is not started); 127 when the server cannot be started.
    """
    from bgc.app.commands import mcp_proxy as proxy_command

    try:
        status = proxy_command.run(
            command or [], policy=policy, server=server, mode=mode, filter_tools=filter_tools, store=store, wait=wait,
            url=url, bearer_env=bearer_env, timeout=timeout, listen=listen, token_file=token_file,
            allow_origins=allow_origin or (), closed=closed, redact=redact, gateway=gateway,
        )
    except BgcError as error:
        fail(error)
    raise typer.Exit(status)


@app.command(
    "acp-proxy",
    context_settings={"allow_interspersed_args": False},
    epilog="Example, in Zed's settings.json: \"agent_servers\": {\"Claude Code (bgc)\": {\"type\": \"custom\", \"command\": \"bgc\", \"args\": [\"acp-proxy\", \"-p\", \"/abs/policy.bgp\", \"--agent\", \"claude-code\", \"--\", \"npx\", \"@zed-industries/claude-code-acp\"]}}   (bgc init zed writes it)",
)
def acp_proxy(
    command: Annotated[list[str], typer.Argument(metavar="-- AGENT [ARGS]...", help="The ACP agent to run behind the policy, after --.")],
    policy: Annotated[
        Optional[str], typer.Option("--policy", "-p", metavar="FILE", help="The policy (default: `policy` in [tool.bgc] or bgc.toml).")
    ] = None,
    agent: Annotated[Optional[str], typer.Option("--agent", metavar="AGENT", help=f"Whose tool declarations map a permission request's tool input ({AGENT_NAMES}); default: its kind and locations only.")] = None,
    mode: ModeOption = None,
    store: Annotated[str, typer.Option("--store", metavar="STORE", help="Where asks wait for approval and decisions are recorded: a SQLite file or a postgresql:// URL; `none`: neither.")] = ".bgc/kernel.db",
    wait: Annotated[float, typer.Option("--wait", metavar="SECONDS", help="Hold a request that needs `bgc approve` this long (0: refuse it at once).")] = 0.0,
    unknown: Annotated[str, typer.Option("--unknown", metavar="ANSWER", help="A tool call bgc cannot map: ask (the person at the editor decides) or deny.")] = "ask",
    max_message: Annotated[Optional[int], typer.Option("--max-message", metavar="BYTES", help="The largest message read from either side (default 64 MiB).")] = None,
) -> None:
    """Run an ACP agent (stdio) behind the policy, for an editor: what the agent asks of the editor is decided first.

    File reads and writes are decided before the editor sees them (refused: the editor never serves the buffer);
    permission requests are answered by bgc (deny: reject_once; allow: allow_once, never allow_always), put to
    the person at the editor without allow_always, or held for `bgc approve` (--wait); terminals are decided as
    the command they run, inside the session's project; session/cancel cancels what waits. Every decision is
    recorded in the ledger. Lines bgc cannot read strictly are refused, both ways. SIGTERM, SIGINT and SIGHUP
    are passed to the agent. Exit: the agent's status; 2 when the policy or the store cannot be read (no agent
    starts: every editor request is answered with the reason); 127 when the agent cannot be started.
    """
    from bgc.app.commands import acp_proxy as proxy_command

    try:
        status = proxy_command.run(command, policy=policy, mode=mode, agent=agent, store=store, wait=wait, unknown=unknown, max_message=max_message)
    except BgcError as error:
        fail(error)
    raise typer.Exit(status)


@app.command(
    "sandbox",
    context_settings={"allow_interspersed_args": False},
    epilog="Example: bgc sandbox -p policy.bgp -- python -m pytest -q   (bgc sandbox --explain -p policy.bgp shows the mapping)",
)
def sandbox(
    command: Annotated[Optional[list[str]], typer.Argument(metavar="-- COMMAND [ARGS]...", help="The command to run confined, after --.")] = None,
    plan: Annotated[Optional[str], typer.Option("--plan", metavar="PLAN", help="Enforce these compiled plans instead of a policy.")] = None,
    policy: PolicyOption = None,
    mode: ModeOption = None,
    root: Annotated[Optional[str], typer.Option("--root", metavar="DIR", help="The project root (default: the current directory).")] = None,
    explain: Annotated[bool, typer.Option("--explain", help="Print the mapping (view, environment, network, limits) and run nothing.")] = False,
    timeout: Annotated[Optional[float], typer.Option("--timeout", metavar="SECONDS", help="Kill the command's whole process group after this long (exit 124).")] = None,
    max_output: Annotated[Optional[int], typer.Option("--max-output", metavar="BYTES", help="Relay at most this many bytes of output, then kill the command.")] = None,
) -> None:
    """Run a command confined to what the plan grants (bubblewrap and Landlock; docs/sandbox.md).

    The project is read-only but for the directories the plan grants writes to; files the plan
    refuses to read are masked; nothing of the home directory or the host is visible beyond
    the policy's host grants and a minimal toolchain; no network but a proxy that lets
    through exactly the granted URLs (refusals on stderr); a private /tmp and PID
    namespace; no credentials in the environment. The mapping is proven never wider than the
    plan before anything runs. Exit: the command's status; 2 when the sandbox cannot be exact
    (a bad policy, a failed proof, no way to confine here), and nothing runs.
    """
    from bgc.app.commands import sandbox as command_module

    try:
        status = command_module.run(command or (), plan=plan, policy=policy, mode=mode, root=root, explain=explain, timeout=timeout, max_output=max_output)
    except BgcError as error:
        fail(error)
    raise typer.Exit(status)


@app.command("export", epilog="Example: bgc export --target sandbox-runtime -p policy.bgp -o - > srt-settings.json")
def export_command(
    target: Annotated[
        Literal["claude-code", "sandbox-runtime", "codex", "seatbelt"],
        typer.Option("--target", "-t", metavar="TARGET", help="claude-code (.claude/settings.json's sandbox key), sandbox-runtime (srt --settings), codex (.codex/config.toml) or seatbelt (a macOS profile, untested)."),
    ],
    plan: Annotated[Optional[str], typer.Option("--plan", metavar="PLAN", help="Export these compiled plans instead of a policy.")] = None,
    policy: PolicyOption = None,
    mode: ModeOption = None,
    root: Annotated[Optional[str], typer.Option("--root", metavar="DIR", help="The project root (default: the current directory).")] = None,
    output: Annotated[Optional[str], typer.Option("--output", "-o", metavar="FILE", help="Write to FILE (atomically); - writes to stdout. Default: the target's usual file in the project.")] = None,
    runtime: Annotated[Optional[list[str]], typer.Option("--runtime", metavar="PATH", help="A path the sandboxing tool itself needs to read inside the sandbox (where it is installed, outside /usr); repeat it.")] = None,
) -> None:
    """Write the sandbox settings another tool reads, proven never wider than the plan.

    The plan is mapped as for `bgc sandbox`, then written for the target and read back as the
    tool applies it: every path and host the settings open must lie inside what the plan
    grants, checked by bgc's algebra. What the target's format cannot say exactly is dropped
    and listed (narrowed: ...), never widened. Exit 0 when every grant is carried, 1 when the
    export is narrower than the plan, 2 when nothing could be exported (bad policy, a failed
    proof) and nothing is written.
    """
    from bgc.app.commands import export as command

    run(lambda: command.run(target, plan=plan, policy=policy, mode=mode, root=root, output=output, runtime=runtime or ()))


@app.command("match")
def match_command(
    pattern: Annotated[str, typer.Argument(metavar="PATTERN", help="The pattern, in bgc's glob dialect (quote it for the shell).")],
    texts: Annotated[
        Optional[list[str]], typer.Argument(metavar="[TEXT]...", help="Texts to test. None given: read stdin, one per line.")
    ] = None,
    raw: Annotated[bool, typer.Option("--raw", help="Match each text exactly as given, without normalising.")] = False,
    resource: Annotated[
        Optional[str],
        typer.Option("--resource", "-r", metavar="R", help="Normalise texts as values of resource R (default: fs)."),
    ] = None,
    quiet: QuietOption = False,
    color: ColorOption = "auto",
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
    from bgc.app.commands import match as command

    run(lambda: command.run(pattern, texts or (), raw=raw, resource=resource, quiet=quiet, color_choice=color))


order_app = command_group("order", "Work orders by hand: `bgc order new` writes a valid one.")


@order_app.command("new")
def order_new(
    intent: Annotated[str, typer.Option("--intent", "-i", metavar="KIND", help="The intent's kind, a dotted name (patch.apply).")],
    model: Annotated[str, typer.Option("--model", metavar="NAME", help="The model (or person) that proposed it.")],
    payload: Annotated[Optional[str], typer.Option("--payload", metavar="TEXT", help="The intent's payload, as text.")] = None,
    requests: Annotated[
        Optional[list[str]], typer.Option("--request", "-r", metavar="ATOM", help="A requested atom resource:action:pattern; repeat it.")
    ] = None,
    calls: Annotated[
        Optional[list[str]],
        typer.Option("--call", metavar="JSON", help='A tool call, {"tool": …, "server": …, "params": {…}}; repeat it.'),
    ] = None,
    parents: Annotated[
        Optional[list[str]], typer.Option("--parent", metavar="ID", help="The id of a proposal this one derives from; repeat it.")
    ] = None,
    prompt: Annotated[
        Optional[str], typer.Option("--prompt", metavar="TEXT", help="The prompt, as text; - reads it from stdin.")
    ] = None,
    prompt_file: Annotated[Optional[str], typer.Option("--prompt-file", metavar="FILE", help="The prompt, as the bytes of FILE.")] = None,
    prompt_digest: Annotated[
        Optional[str], typer.Option("--prompt-digest", metavar="ID", help="The prompt's digest, computed elsewhere (sha256:HEX).")
    ] = None,
    output_format: Annotated[
        Literal["yaml", "json", "cbor"], typer.Option("--format", "-f", metavar="FORMAT", help="yaml, json or cbor.")
    ] = "yaml",
    output: Annotated[Optional[str], typer.Option("--output", "-o", metavar="FILE", help="Write to FILE (atomically).")] = None,
) -> None:
    """Write a valid work order from its parts; its prompt digest is computed from the prompt.

    `origin.prompt` is `sha256:` and the SHA-256 of the prompt's exact bytes (UTF-8 text,
    nothing stripped: `echo` adds a newline, `printf` does not). The order is checked as
    `bgc compile` checks a loaded one, so `bgc digest` reads back the id it has. Exit 0 written,
    2 on a part that is not valid (the message names its option; nothing is written).
    """
    from bgc.app.commands import order as command

    run(lambda: command.new(
        intent=intent, payload=payload, requests=requests or (), calls=calls or (), model=model,
        parents=parents or (), prompt=prompt, prompt_file=prompt_file, prompt_digest_text=prompt_digest,
        output_format=output_format, output=output,
    ))


@app.command()
def hook(
    agent: Annotated[
        AgentName,
        typer.Argument(metavar="AGENT", help=f"The agent whose hook protocol to speak: {' or '.join(AGENT_NAMES.rsplit(', ', 1))}."),
    ],
    policy: Annotated[Optional[str], typer.Option("--policy", "-p", metavar="FILE", help="The policy to decide with (default: `policy` in bgc.toml / [tool.bgc] of the project).")] = None,
    plan: Annotated[Optional[str], typer.Option("--plan", metavar="FILE", help="Decide with these compiled plans instead of a policy.")] = None,
    mode: Annotated[Optional[str], typer.Option("--mode", "-m", metavar="MODE", help="The policy's mode (default: the configured one, else the policy's default).")] = None,
    unknown: Annotated[Literal["ask", "deny"], typer.Option("--unknown", metavar="ANSWER", help="The answer for a tool no declaration covers: ask or deny.")] = "ask",
    timeout: Annotated[float, typer.Option("--timeout", metavar="SECONDS", help="Block the call when no decision is made in time.")] = 20.0,
    store: Annotated[Optional[str], typer.Option("--store", metavar="STORE", help="Where asks wait for approval and decisions are recorded: a SQLite file or a postgresql:// URL (default: .bgc/kernel.db in the project; `none`: neither).")] = None,
    asks: Annotated[Literal["agent", "bgc"], typer.Option("--asks", metavar="WHERE", help="agent: an ask any one person may answer also goes to the agent's permission dialog; bgc: every ask waits for `bgc approve`.")] = "agent",
) -> None:
    """Decide the tool call an agent is about to make, in the agent's own hook protocol.

    Reads the agent's hook input on stdin (Claude Code: PreToolUse, PermissionRequest; Gemini
    CLI: BeforeTool; Codex: PreToolUse, PermissionRequest) and answers allow, ask or deny on
    stdout in the agent's format, the reason naming the rule (file:line) that decided. An ask
    becomes a permission request (`bgc pending`, `bgc approve`), and every decision is recorded
    in the ledger (`bgc log show`). Exit 0 with that answer; anything that fails (bad input, a
    policy that does not load, a store that cannot record, no decision within --timeout) blocks
    the call: exit 2 with the reason on stderr. `bgc init AGENT` installs it.
    """
    from bgc.app.commands import hook as command

    run(lambda: command.run(agent, policy=policy, plan=plan, mode=mode, unknown=unknown, timeout=timeout, store=store, asks=asks))


@app.command()
def serve(
    directory: Annotated[str, typer.Option("--dir", "-C", metavar="DIR", help="The project directory.")] = ".",
    idle: Annotated[float, typer.Option("--idle", metavar="SECONDS", help="Exit after this long without a request.")] = 900.0,
    detach: Annotated[bool, typer.Option("--detach", help="Start in the background; return once it listens.")] = False,
    stop: Annotated[bool, typer.Option("--stop", help="Stop the project's server.")] = False,
    status: Annotated[bool, typer.Option("--status", help="Show the project's server (exit 1 when none runs).")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print nothing.")] = False,
) -> None:
    """Keep a project's hook decisions warm: a server the agent's `bgc hook` hands each call to.

    The hook asks the project's server first and writes back its answer; the server decides with
    the same function the hook runs, given the hook's options, stdin, working directory and environment, keeping bgc
    imported, compiled policies in memory and the store open (each checked on every call), and
    reading approvals, modes and the ledger afresh every time. No server, or any trouble reaching
    it, and the hook decides in its own process: the answers are the same. Its pipes are private
    to your user. `bgc init AGENT` starts it at SessionStart (and stops it at SessionEnd where the
    agent has one).
    """
    from bgc.app.commands import serve as command

    run(lambda: command.run(directory, idle=idle, detach=detach, stop=stop, status=status, quiet=quiet))


init_app = command_group("init", "Set a project up for an agent: a starter policy and the agent's hook.")


DirOption = Annotated[str, typer.Option("--dir", "-C", metavar="DIR", help="The project directory.")]
INIT_KEPT = """Nothing there is lost: other settings and hooks are kept, the previous file is saved
    beside it as .bak, the write is atomic, and a policy file you edited is kept. Running it
    again changes nothing. Exit 0 when done; invalid JSON in the settings is refused with its line
    and column (exit 2), and nothing is written."""


TeamOption = Annotated[bool, typer.Option("--team", help="Write the hooks into the settings the team commits, in a form every machine runs (the bgc on PATH).")]


def _init_command(agent: Agent) -> None:
    """Register ``bgc init AGENT``, its help from the agent's row."""
    setup = agent.setup
    if setup.local is not None:
        where = (
            f"{setup.directory}/{setup.local} ({setup.event}), this machine's own settings, starting this\n"
            f"    installation of bgc; with --team into {setup.directory}/{setup.settings}, which the team commits,\n"
            "    starting the bgc on the agent's PATH."
        )
    else:
        where = (
            f"{setup.directory}/{setup.settings} ({setup.event}), which the team commits (the agent has no settings\n"
            "    of one's own): they start the bgc on the agent's PATH, so they work on every machine."
        )
    summary = (
        f"Write a starter policy into {setup.directory}/bgc/ and merge `bgc hook {agent.name}` into {where}\n\n"
        "    Every hook blocks the call (exit 2, the fix named) when bgc cannot start: never a call let\n"
        "    through unchecked."
    )

    def init_agent(directory: DirOption = ".", team: TeamOption = False) -> None:
        from bgc.app.commands import init as command

        run(lambda: command.run(agent.name, directory=directory, team=team))

    init_app.command(agent.name, help=f"{summary}\n\n    {INIT_KEPT}")(init_agent)


for _agent in AGENTS.values():
    _init_command(_agent)


@init_app.command("mcp")
def init_mcp(
    config: Annotated[str, typer.Argument(metavar="CONFIG", help="An MCP client configuration (.mcp.json, claude_desktop_config.json).")],
    policy: Annotated[str, typer.Option("--policy", "-p", metavar="FILE", help="The policy every server will run behind.")],
    team: Annotated[bool, typer.Option("--team", help="A file the team commits (.mcp.json): start the bgc on PATH, the policy named relative to the project.")] = False,
) -> None:
    """Run every server an MCP client will start or reach through `bgc mcp-proxy`.

    Reads `mcpServers` (Claude Desktop, Claude Code, Cursor, Gemini CLI), `projects.<path>.mcpServers`
    (Claude Code's ~/.claude.json), `servers` (VS Code) and Codex's config.toml. Each server keeps its
    name (the NAME of `tool … on NAME` in the policy), command, arguments and environment; a remote
    Streamable HTTP server ("type": "http", httpUrl) becomes `bgc mcp-proxy --url`, its bearer token
    moved to the entry's env; a server already behind the proxy is left alone. The original file is
    kept as CONFIG.bgc-backup. Exit 0 when every server is behind the proxy, 1 when one is not
    (listed as UNGUARDED: an SSE server or one whose transport is not said, one sending other
    headers, a Codex server, Gemini's mcp.serverCommand), 2 on a bad file (located; nothing written).
    """
    from bgc.app.commands import init_mcp as command

    try:
        code, summary = command.run(config, policy, team=team)
    except BgcError as error:
        fail(error)
    if summary:
        typer.echo(summary)
    raise typer.Exit(code)


def _init_editor_command(editor: str) -> None:
    """Register ``bgc init EDITOR`` for an editor that starts ACP agents (Zed, JetBrains)."""
    from bgc.app.commands.init_acp import EDITORS

    setup = EDITORS[editor]

    def init_editor(
        command: Annotated[Optional[list[str]], typer.Argument(metavar="-- AGENT [ARGS]...", help="An agent to add (with --name), after --.")] = None,
        policy: Annotated[str, typer.Option("--policy", "-p", metavar="FILE", help="The policy every agent will run behind.")] = "",
        name: Annotated[Optional[str], typer.Option("--name", metavar="NAME", help="The name the editor shows for the agent added after --.")] = None,
        agent: Annotated[Optional[str], typer.Option("--agent", metavar="AGENT", help=f"Whose tools the agents' permission requests name ({AGENT_NAMES}).")] = None,
        store: Annotated[str, typer.Option("--store", metavar="STORE", help="Where the proxy records and holds asks (made absolute); `none`: neither.")] = ".bgc/kernel.db",
        settings: Annotated[Optional[str], typer.Option("--settings", metavar="FILE", help="The settings file (default: the editor's own for this user).")] = None,
    ) -> None:
        from bgc.app.commands import init_acp as command_module

        if not policy:
            fail(UsageError("-p POLICY: the policy every agent will run behind"))
        try:
            code, summary = command_module.run(editor, settings=settings, policy=policy, store=store, name=name, agent=agent,
                                               command=command or [])  # fmt: skip
        except BgcError as error:
            fail(error)
        if summary:
            typer.echo(summary)
        raise typer.Exit(code)

    init_app.command(
        editor, context_settings={"allow_interspersed_args": False},
        epilog=f"Example: bgc init {editor} -p ~/policy.bgp --agent claude-code --name 'Claude Code (bgc)' -- npx @zed-industries/claude-code-acp",
        help=f"""Run every ACP agent {setup.name} starts through `bgc acp-proxy`, and add one after --.

    Rewrites agent_servers in {setup.settings}: each agent the editor starts as a command keeps its name and
    runs behind the policy; an agent the editor installs itself (registry, extension, built in) is listed as
    UNGUARDED (exit 1). The policy is compiled first (exit 2 on a bad policy or file, nothing written); the
    original is kept as FILE.bgc-backup; running it again changes nothing. If bgc cannot start behind the
    policy, the editor is told why and the bare agent never runs. Exit 0 done; 1 an agent is left UNGUARDED;
    2 bad input, nothing written. (docs/acp.md)""",
    )(init_editor)


for _editor in ("zed", "jetbrains"):
    _init_editor_command(_editor)


import_app = command_group("import", "Translate another tool's permission rules into a bgc policy.")


@import_app.command("claude-code")
def import_claude_code(
    settings: Annotated[str, typer.Argument(metavar="SETTINGS.json", help="A Claude Code settings file (.claude/settings.json).")],
    output: Annotated[Optional[str], typer.Option("--output", "-o", metavar="FILE", help="Write the policy to FILE (default: stdout).")] = None,
    home: Annotated[
        Optional[str], typer.Option("--home", metavar="DIR", help="The home directory that ~/ in Read/Edit rules stands for.")
    ] = None,
    allow_partial: Annotated[
        bool, typer.Option("--allow-partial", help="Write the policy even when a deny or ask rule could not be translated (it is listed in the header).")
    ] = False,
) -> None:
    """Translate Claude Code's `permissions.allow/ask/deny` into a formatted .bgp policy.

    Each rule becomes a bgc rule of the same effect (Claude Code evaluates deny, then ask, then
    allow: so does bgc), with an inline `expect` per example that `bgc check` verifies. Bash
    rules are matched word by word (`Bash(npm run test:*)` is `proc:exec:npm/run/test,
    npm/run/test/**`); Read/Edit paths are workspace paths with the project root as `/`
    (`//abs` and `~/x` are `host` paths); `WebFetch(domain:h)` is `net:connect` to h;
    `mcp__s__t` is `mcp:call:s/t`; any other tool through bgc's mapping of Claude Code's
    tools, when exact (`Agent(Explore)` is `agent:spawn:Explore`, `WebSearch` `search:web:**`).

    A rule with no exact translation is not guessed: it is listed on stderr and in the policy's
    header with the reason, as is every other setting of `permissions` bgc does not follow
    (`defaultMode`, `additionalDirectories`). A deny or ask left out would leave the policy
    wider than the settings, so then nothing is written unless --allow-partial. Exit 0 when
    everything was translated, 1 when something was not, 2 for a file that is not a settings
    file (nothing is written).

    Example: `bgc import claude-code .claude/settings.json -o claude.bgp && bgc check claude.bgp`
    """
    from bgc.app.commands import import_claude_code as command

    run(lambda: command.run(settings, output=output, home=home, allow_partial=allow_partial))


# The other adapters register their commands on the same app, after these (the order of `--help`).
from bgc.app import cli_ledger, cli_kernel  # noqa: E402, F401, I001


def main() -> None:
    """Run the typer app; :func:`bgc.app.guard.guarded` keeps every traceback from the user.

    The ``bgc`` script enters through :func:`bgc.app.launch.main`, which runs the plain forms of the
    hot commands without importing typer and hands everything else to this function.
    """
    from bgc.app.guard import guarded

    guarded(app)


if __name__ == "__main__":  # pragma: no cover
    main()
