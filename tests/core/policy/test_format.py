"""``bgc fmt``: one canonical layout, comments kept, idempotent, never a half-written file."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bgc.core.patterns import glob
from bgc.errors import Span
from bgc.core.policy.ast import (
    FIELDS,
    And,
    Approvals,
    AtomTemplate,
    Compare,
    Condition,
    DefaultMode,
    Expect,
    Filesystem,
    Include,
    InList,
    Matches,
    ModeBlock,
    Not,
    Or,
    Rule,
    SourceFile,
    Statement,
    ToolDecl,
)
from bgc.core.policy.format import format_source, format_text
from bgc.core.policy.parser import parse_source
from tests.samples import bgc, examples

ROOT = Path(__file__).parents[3]

EXPECT_FIELDS = tuple(f for f in FIELDS if f != "call.tool")  # an expect cannot set call.tool


def roundtrip(text: str) -> str:
    """Format, check the result parses to the same statements and comments, and is a fixpoint."""
    formatted = format_text(text, "t.bgp")
    before, after = parse_source(text, "t.bgp"), parse_source(formatted, "t.bgp")
    assert after == before
    assert [c.text for c in after.comments] == [c.text.rstrip() for c in before.comments]
    assert format_text(formatted, "t.bgp") == formatted
    return formatted


# ---- one construct at a time: exact canonical text ----------------------------------------

CANONICAL = [
    ("allow   fs:write:/src/**", "allow fs:write:/src/**\n"),
    ('allow fs:write:"/src/**"', "allow fs:write:/src/**\n"),
    ('allow fs:write:"/src/my dir/**"', 'allow fs:write:"/src/my dir/**"\n'),
    ("allow fs:write:/src/**,/tests/**", "allow fs:write:/src/**, /tests/**\n"),
    ('allow fs:read:/a, "b c", "d,e", "f#g"', 'allow fs:read:/a, "b c", "d,e", "f#g"\n'),
    (r'deny fs:write:"/q\"x"', r'deny fs:write:"/q\"x"' + "\n"),
    ("deny *:*:/etc/**", "deny *:*:/etc/**\n"),
    ('deny fs:*:/.env because   "secrets"', 'deny fs:*:/.env because "secrets"\n'),
    ('deny fs:*:/.env because "a \\"b\\" \\\\"', 'deny fs:*:/.env because "a \\"b\\" \\\\"\n'),
    ('allow fs:read:/x when intent.kind=="a"', 'allow fs:read:/x when intent.kind == "a"\n'),
    ('allow fs:read:/x when origin.model!="m"', 'allow fs:read:/x when origin.model != "m"\n'),
    ('allow fs:read:/x when call.tool in ["a","b"]', 'allow fs:read:/x when call.tool in ["a", "b"]\n'),
    ('allow fs:read:/x when origin.model matches "claude-*"', 'allow fs:read:/x when origin.model matches "claude-*"\n'),
    (
        'allow fs:read:/x when ((intent.kind == "a") and (intent.kind == "b" or intent.kind == "c"))',
        'allow fs:read:/x when intent.kind == "a" and (intent.kind == "b" or intent.kind == "c")\n',
    ),
    (
        'allow fs:read:/x when not intent.kind == "a" or not not (intent.kind == "b")',
        'allow fs:read:/x when not (intent.kind == "a") or not not (intent.kind == "b")\n',
    ),
    (
        'ask pkg:install:* because "r" approvals 2 of [alice,bob , "c d"] when intent.kind == "k"',
        'ask pkg:install:* when intent.kind == "k" approvals 2 of [alice, bob, "c d"] because "r"\n',
    ),
    ('otherwise   ask proc:exec:**  because "the rest"', 'otherwise ask proc:exec:** because "the rest"\n'),
    (
        'otherwise ask fs:write:/** because "r" approvals 1 of [alice]',
        'otherwise ask fs:write:/** approvals 1 of [alice] because "r"\n',
    ),
    ("mode m {\n  otherwise   deny fs:*:/**,/x\n}", "mode m {\n    otherwise deny fs:*:/**, /x\n}\n"),
    ("tool fs.move needs fs:write:{src},fs:write:{dst}", "tool fs.move needs fs:write:{src}, fs:write:{dst}\n"),
    ('tool fs.save needs fs:write:"/my dir/{name}"', 'tool fs.save needs fs:write:"/my dir/{name}"\n'),
    ("mode   edit   {\n  allow fs:write:/src/**\n\n\n  deny fs:write:/x\n}", "mode edit {\n    allow fs:write:/src/**\n\n    deny fs:write:/x\n}\n"),  # noqa: E501
    ("mode readonly {\n}", "mode readonly {}\n"),
    ("default   mode edit\nmode edit {}", "default mode edit\nmode edit {}\n"),
    ("include   'x'".replace("'", '"'), 'include "x"\n'),
    ("filesystem  case-insensitive", "filesystem case-insensitive\n"),
    ("expect allow fs:write:/src/a.py", "expect allow fs:write:/src/a.py\n"),
    (r"expect deny fs:write:/src/\a\*", r"expect deny fs:write:/src/a\*" + "\n"),
    ('expect deny fs:write:"/my dir/x"', 'expect deny fs:write:"/my dir/x"\n'),
    (
        'mode m {}\nexpect deny fs:write:/k  when intent.kind=="x" and origin.model == "y"  in  mode m',
        'mode m {}\nexpect deny fs:write:/k when intent.kind == "x" and origin.model == "y" in mode m\n',
    ),
    ("\n\n# only a comment   \n\n", "# only a comment\n"),
    ("", ""),
    ("allow fs:read:/**\r\ndeny fs:*:/.env\r\n", "allow fs:read:/**\ndeny fs:*:/.env\n"),
]


@pytest.mark.parametrize(("text", "expected"), CANONICAL)
def test_canonical_layout_of_each_construct(text: str, expected: str) -> None:
    assert roundtrip(text) == expected


def test_comments_stay_where_they_were() -> None:
    text = (
        "# header\n"
        "\n\n\n"
        "allow fs:read:/**    # trailing\n"
        "mode edit {   # about edit\n"
        "\n"
        "        # before the rule\n"
        "   allow fs:write:/src/**  # why\n"
        "\n"
        "} # end of edit\n"
        "mode empty {}   # nothing\n"
        "# footer\n"
        "\n"
    )
    assert roundtrip(text) == (
        "# header\n"
        "\n"
        "allow fs:read:/**  # trailing\n"
        "mode edit {  # about edit\n"
        "    # before the rule\n"
        "    allow fs:write:/src/**  # why\n"
        "}  # end of edit\n"
        "mode empty {}  # nothing\n"
        "# footer\n"
    )


def test_bundled_policies_are_formatted() -> None:
    files = sorted((ROOT / "policies").glob("*.bgp")) + sorted((ROOT / "examples").rglob("*.bgp"))
    assert len(files) >= 3
    for path in files:
        text = path.read_text(encoding="utf-8")
        assert roundtrip(text) == text, f"{path} is not in canonical layout (run bgc fmt)"


# ---- generated policies -------------------------------------------------------------------

DUMMY = Span("gen")
_WORD = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=6)
_TEXT = st.text(
    alphabet=st.characters(blacklist_categories=("Cc", "Cf", "Cs", "Zl", "Zp")),  # what a policy may hold (BGC017)
    min_size=1,
    max_size=12,
).filter(lambda s: s.strip() != "")


def _valid_pattern(text: str) -> str | None:
    """A pattern as the parser stores it: valid, NFC, and a quote never spelled ``\\"``."""
    try:
        parsed = glob.parse(unicodedata.normalize("NFC", text)).text
    except glob.PatternError:
        return None
    pairs = re.findall(r"\\.|.", parsed)
    return None if '\\"' in pairs else parsed


PATTERNS = st.one_of(
    st.sampled_from(["/src/**", "/**/.env", "**", "/a b/**", "/x,y", "/h#t", "https://pypi.org/**", r"/a\*b", "/[a-z]*.py"]),
    st.text(alphabet='ab/*?[]!\\ ,#"é:-{}', min_size=1, max_size=10).map(_valid_pattern).filter(bool),
)
RESOURCES = st.sampled_from(["fs", "net", "proc", "pkg.x", "*"])
ACTIONS = st.sampled_from(["read", "write", "connect", "exec", "*"])


def conditions(depth: int = 2) -> st.SearchStrategy[Condition]:
    fields = st.sampled_from(FIELDS)
    leaf = st.one_of(
        st.builds(Compare, fields, st.sampled_from(["==", "!="]), _TEXT, st.just(DUMMY)),
        st.builds(InList, fields, st.lists(_TEXT, min_size=1, max_size=3).map(tuple), st.just(DUMMY)),
        st.builds(Matches, fields, PATTERNS, st.just(DUMMY)),
    )
    if depth == 0:
        return leaf
    inner = conditions(depth - 1)

    def flat(node: type[And] | type[Or]):  # type: ignore[no-untyped-def]
        return st.lists(inner.filter(lambda c: not isinstance(c, node)), min_size=2, max_size=3).map(
            lambda items: node(tuple(items), DUMMY)
        )

    return st.one_of(leaf, st.builds(Not, inner, st.just(DUMMY)), flat(And), flat(Or))


#: Built once: a strategy built inside a composite is rebuilt on every draw, which cost these
#: tests most of their time.
CONDITIONS = conditions()
OPTIONAL_CONDITION = st.none() | CONDITIONS
OPTIONAL_TEXT = st.none() | _TEXT
APPROVER_NAMES = st.lists(st.one_of(_WORD, _TEXT), min_size=1, max_size=3, unique=True)
RULE_PATTERNS = st.lists(PATTERNS, min_size=1, max_size=3)


@st.composite
def rules(draw: st.DrawFn, mode: str | None = None) -> Rule:
    effect, fallback = draw(st.sampled_from([("allow", False), ("ask", False), ("deny", False), ("ask", True), ("deny", True)]))
    approvals = None
    if effect == "ask" and draw(st.booleans()):
        names = draw(APPROVER_NAMES)
        approvals = Approvals(draw(st.integers(1, len(names))), tuple(names), DUMMY)
    return Rule(
        effect,
        draw(RESOURCES),
        draw(ACTIONS),
        tuple(draw(RULE_PATTERNS)),
        draw(OPTIONAL_CONDITION),
        draw(OPTIONAL_TEXT),
        approvals,
        mode,
        DUMMY,
        fallback=fallback,
    )


@st.composite
def templates(draw: st.DrawFn) -> AtomTemplate:
    params = draw(st.lists(st.sampled_from(["path", "src", "dst", "url", "argv0"]), max_size=2, unique=True))
    pieces = draw(st.lists(st.sampled_from(["/", "x", "my dir/", r"\{", "*", "-"]), max_size=3))
    text = "".join(pieces + [f"{{{name}}}/" for name in params]) or "/"
    return AtomTemplate(draw(st.sampled_from(["fs", "net"])), draw(st.sampled_from(["read", "write"])), text, tuple(params), DUMMY)


TOP_RULES = st.lists(rules(), max_size=4)
TOOL_TEMPLATES = st.lists(templates(), min_size=1, max_size=2)
INCLUDE_PATHS = _TEXT.filter(lambda s: not s.startswith("/"))
EXPECT_CONTEXT = st.lists(st.tuples(st.sampled_from(EXPECT_FIELDS), _TEXT), max_size=3, unique_by=lambda p: p[0])


@st.composite
def source_files(draw: st.DrawFn) -> SourceFile:
    statements: list[Statement] = []
    modes = draw(st.lists(_WORD, max_size=2, unique=True))
    tools = draw(st.lists(st.sampled_from(["fs.read", "fs.write", "net.fetch", "shell.run"]), max_size=3, unique=True))
    for tool in tools:
        statements.append(ToolDecl(tool, tuple(draw(TOOL_TEMPLATES)), DUMMY))
    for mode in modes:
        statements.append(ModeBlock(mode, tuple(draw(st.lists(rules(mode), max_size=2))), DUMMY))
    statements += draw(TOP_RULES)
    if modes and draw(st.booleans()):
        statements.append(DefaultMode(modes[0], DUMMY))
    if draw(st.booleans()):
        statements.append(Include(draw(INCLUDE_PATHS), DUMMY))
    if draw(st.booleans()):
        statements.append(Filesystem(draw(st.booleans()), DUMMY))
    for _ in range(draw(st.integers(0, 2))):
        context = draw(EXPECT_CONTEXT)
        statements.append(
            Expect(
                draw(st.sampled_from(["allow", "ask", "deny"])),
                draw(st.sampled_from(["fs", "net"])),
                draw(st.sampled_from(["read", "write"])),
                draw(_TEXT),
                tuple(context),
                draw(st.none() | st.sampled_from(modes)) if modes else None,
                DUMMY,
            )
        )
    return SourceFile("gen.bgp", tuple(draw(st.permutations(statements))))


@settings(max_examples=examples(25, thorough=500), deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(source_files())
def test_generated_policies_round_trip(source: SourceFile) -> None:
    text = format_source(source)
    parsed = parse_source(text, "gen.bgp")
    assert parsed == source
    assert format_source(parsed) == text


@st.composite
def messy_layouts(draw: st.DrawFn) -> str:
    """A formatted policy re-spaced at random: blank lines, indentation, comments anywhere."""
    lines = format_source(draw(source_files())).splitlines()
    out: list[str] = []
    for line in lines:
        out.extend([""] * draw(st.integers(0, 2)))
        if draw(st.booleans()):
            out.append(" " * draw(st.integers(0, 3)) + "# " + draw(_TEXT))
        pad = " " * draw(st.integers(0, 4))
        trailing = ("  #" + draw(_TEXT)) if draw(st.booleans()) else ""
        out.append(pad + line.strip() + trailing + " " * draw(st.integers(0, 2)))
    return "\n".join(out) + draw(st.sampled_from(["", "\n", "\n\n"]))


@settings(max_examples=examples(20, thorough=400), deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(messy_layouts())
def test_fmt_is_idempotent_and_keeps_every_comment(text: str) -> None:
    roundtrip(text)


# ---- the command --------------------------------------------------------------------------

MESSY = "allow   fs:read:/**   # read\ndeny fs:*:/.env\n"
CLEAN = "allow fs:read:/**  # read\ndeny fs:*:/.env\n"


def test_fmt_rewrites_files(tmp_path: Path) -> None:
    messy, clean = tmp_path / "a.bgp", tmp_path / "b.bgp"
    messy.write_text(MESSY)
    clean.write_text(CLEAN)
    messy.chmod(0o640)
    result = bgc("fmt", str(messy), str(clean))
    assert result.exit_code == 0
    assert result.output == f"reformatted {messy}\n"
    assert messy.read_text() == CLEAN
    assert messy.stat().st_mode & 0o777 == 0o640
    assert [p.name for p in tmp_path.iterdir()] == sorted(["a.bgp", "b.bgp"]) or len(list(tmp_path.iterdir())) == 2


def test_fmt_check_lists_files_and_writes_nothing(tmp_path: Path) -> None:
    messy, clean = tmp_path / "a.bgp", tmp_path / "b.bgp"
    messy.write_text(MESSY)
    clean.write_text(CLEAN)
    result = bgc("fmt", "--check", str(messy), str(clean))
    assert result.exit_code == 1
    assert result.output == f"would reformat {messy}\n"
    assert messy.read_text() == MESSY
    assert bgc("fmt", "--check", str(clean)).exit_code == 0


def test_fmt_diff(tmp_path: Path) -> None:
    messy = tmp_path / "a.bgp"
    messy.write_text(MESSY)
    result = bgc("fmt", "--diff", str(messy))
    assert result.exit_code == 1
    assert "-allow   fs:read:/**   # read\n+allow fs:read:/**  # read\n" in result.output
    assert messy.read_text() == MESSY


def test_fmt_writes_nothing_when_any_file_is_bad(tmp_path: Path) -> None:
    messy, bad = tmp_path / "a.bgp", tmp_path / "z.bgp"
    messy.write_text(MESSY)
    bad.write_text("allow fs:read:/**\nalow fs:write:/x\n")
    result = bgc("fmt", str(messy), str(bad))
    assert result.exit_code == 2
    assert f"{bad}:2:1:" in result.output
    assert messy.read_text() == MESSY
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.bgp", "z.bgp"]


def test_fmt_stdin_to_stdout() -> None:
    result = bgc("fmt", "-", input=MESSY)
    assert result.exit_code == 0
    assert result.output == CLEAN


def test_fmt_drops_a_byte_order_mark(tmp_path: Path) -> None:
    path = tmp_path / "a.bgp"
    path.write_bytes(b"\xef\xbb\xbf" + CLEAN.encode())
    assert bgc("fmt", "--check", str(path)).exit_code == 1
    assert bgc("fmt", str(path)).exit_code == 0
    assert path.read_bytes() == CLEAN.encode()


def test_fmt_writes_through_a_symlink(tmp_path: Path) -> None:
    """The link stays a link and its target gets the formatted text, with its permissions."""
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "policy.bgp"
    target.write_text(MESSY)
    target.chmod(0o640)
    link = tmp_path / "link.bgp"
    link.symlink_to(Path("real") / "policy.bgp")
    result = bgc("fmt", str(link))
    assert result.exit_code == 0, result.output
    assert link.is_symlink() and os.readlink(link) == os.path.join("real", "policy.bgp")
    assert target.read_text() == CLEAN
    assert target.stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in (tmp_path / "real").iterdir()) == ["policy.bgp"]  # no temporary left


def test_write_atomic_through_a_dangling_symlink_creates_the_target(tmp_path: Path) -> None:
    from bgc.core.values.files import write_atomic

    link = tmp_path / "out.json"
    link.symlink_to("made.json")
    write_atomic(link, b"{}\n")
    assert link.is_symlink() and (tmp_path / "made.json").read_bytes() == b"{}\n"
    assert (tmp_path / "made.json").stat().st_mode & 0o777 == 0o644


def _limit_memory() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (1 << 31, 1 << 31))


@pytest.mark.e2e
def test_a_policy_larger_than_the_limit_is_refused_without_reading_it_all(tmp_path: Path) -> None:
    """`bgc check` of /dev/zero used to read forever; every policy read stops at MAX_BYTES + 1."""
    from bgc.core.values.files import MAX_BYTES

    big = tmp_path / "big.bgp"
    with open(big, "wb") as handle:
        handle.truncate(MAX_BYTES + 1)
    links = [big]
    if os.path.exists("/dev/zero"):
        zero = tmp_path / "zero.bgp"
        zero.symlink_to("/dev/zero")
        links.append(zero)
    for path in links:
        for args in (["check", str(path)], ["fmt", "--check", str(path)], ["test", str(path)]):
            result = subprocess.run(
                [sys.executable, "-c", "from bgc.app.launch import main; main()", *args],
                capture_output=True, text=True, timeout=60, env={**os.environ, "BGC_CACHE_DIR": str(tmp_path / "cache")},
                preexec_fn=_limit_memory,  # a regression fails this test instead of exhausting the machine
            )  # fmt: skip
            assert result.returncode == 2, (args, result.stdout, result.stderr)
            assert f"{path}: error" in result.stdout + result.stderr
            assert "larger than 8 MiB" in result.stdout + result.stderr
