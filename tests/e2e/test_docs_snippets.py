"""The code in README.md and docs/*.md runs, and what it shows is what bgc prints.

A block is run when the line before its fence is ``<!-- bgc-doctest -->``:

* ```` ```text ```` / ```` ```console ```` **transcripts**: each ``$ COMMAND`` line is run with bash
  in a scratch copy of the repository's examples and policies, and the lines after it (up to the
  next ``$``) must be exactly its output (stdout and stderr, as a terminal interleaves them
  without colour); a line ``...`` stands for any number of lines.
* ```` ```sh ```` blocks: each command line runs and must not end in a usage error or a traceback
  (exit 2 or more, apart from the gate's ask and deny, 3 and 4: findings are what examples show);
  a ``pip install boundgraph-bgc`` line is what the test's environment already did, and is skipped.
* ```` ```python ```` blocks run as a script and must exit 0.

``<!-- bgc-doctest: skip REASON -->`` says why a block is not run; every transcript of ``$ bgc``
must carry one marker or the other, so no example is left unchecked by oversight.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from bgc.errors import ExitCode, exit_code_table

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]
MARK = "<!-- bgc-doctest -->"
SKIP = re.compile(r"<!-- bgc-doctest: skip \S.* -->")
FENCE = re.compile(r"^```(\w*)\s*$")


@dataclass(frozen=True)
class Block:
    file: Path
    line: int  # of the opening fence, 1-based
    lang: str
    marker: str
    body: str

    @property
    def id(self) -> str:
        return f"{self.file.name}:{self.line}"


def blocks(path: Path) -> list[Block]:
    found = []
    lines = path.read_text(encoding="utf-8").splitlines()
    index = 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if opening and opening.group(1):
            end = next(j for j in range(index + 1, len(lines)) if lines[j].startswith("```"))
            marker = lines[index - 1].strip() if index else ""
            found.append(Block(path, index + 1, opening.group(1), marker, "\n".join(lines[index + 1 : end]) + "\n"))
            index = end
        index += 1
    return found


ALL = [block for path in DOCS for block in blocks(path)]
RUN = [block for block in ALL if block.marker == MARK]


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    """A copy of what the examples use, so commands that write (``-o plan.json``, ``fmt``) touch no checkout."""
    for name in ("examples", "policies"):
        shutil.copytree(ROOT / name, tmp_path / name)
    shutil.copy(ROOT / "bgc.toml", tmp_path / "bgc.toml")
    (tmp_path / ".git").mkdir()  # the repository root, for configuration lookup
    return tmp_path


def shell(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}", "NO_COLOR": "1", "COLUMNS": "100"}
    env.pop("FORCE_COLOR", None)
    return subprocess.run(
        ["bash", "-c", command], cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300
    )


def matches(expected: list[str], actual: list[str]) -> bool:
    """Line by line, a ``...`` line standing for any run of lines."""
    if not expected:
        return not actual
    if expected[0] == "...":
        return any(matches(expected[1:], actual[cut:]) for cut in range(len(actual) + 1))
    return bool(actual) and expected[0] == actual[0] and matches(expected[1:], actual[1:])


def test_some_blocks_are_run() -> None:
    kinds = {block.lang for block in RUN}
    assert {"text", "sh", "python"} <= kinds and len(RUN) >= 10


def test_every_bgc_transcript_is_run_or_says_why_not() -> None:
    for block in ALL:
        if block.body.startswith("$ bgc"):
            assert block.marker == MARK or SKIP.fullmatch(block.marker), f"{block.id}: transcript without a doctest marker"


def test_the_transcript_check_can_fail() -> None:
    assert matches(["a", "...", "d"], ["a", "b", "c", "d"]) and matches(["..."], [])
    assert not matches(["a", "d"], ["a", "b", "d"]) and not matches(["a"], ["a", "b"])


@pytest.mark.parametrize("block", RUN, ids=[block.id for block in RUN])
def test_block(block: Block, scratch: Path) -> None:
    if block.lang in ("text", "console"):
        check_transcript(block, scratch)
    elif block.lang == "sh":
        for command in block.body.replace("\\\n", " ").splitlines():  # a continued line is one command
            if command.strip() and not command.lstrip().startswith(("#", "pip install boundgraph-bgc")):
                done = shell(command, scratch)
                assert "Traceback" not in done.stdout, f"{block.id}: {command}\n{done.stdout}"
                assert done.returncode in (ExitCode.OK, ExitCode.FINDINGS, ExitCode.ASK, ExitCode.DENIED), (
                    f"{block.id}: {command} exited {done.returncode}\n{done.stdout}"
                )
    elif block.lang == "python":
        done = subprocess.run([sys.executable, "-c", block.body], cwd=scratch, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, f"{block.id}:\n{done.stderr}"
    else:
        pytest.fail(f"{block.id}: a {block.lang!r} block cannot be run")


def check_transcript(block: Block, cwd: Path) -> None:
    steps: list[tuple[str, list[str]]] = []
    for line in block.body.splitlines():
        if line.startswith("$ "):
            steps.append((line[2:], []))
        else:
            assert steps, f"{block.id}: a transcript starts with '$ '"
            steps[-1][1].append(line)
    for command, expected in steps:
        actual = shell(command, cwd).stdout.splitlines()
        assert matches(expected, actual), f"{block.id}: $ {command}\nexpected:\n" + "\n".join(expected) + "\nactual:\n" + "\n".join(actual)


@pytest.mark.parametrize("doc", ["README.md", "docs/ci.md"])
def test_exit_code_table_is_generated_from_the_enum(doc: str) -> None:
    text = (ROOT / doc).read_text(encoding="utf-8")
    start, end = "<!-- exit-codes: generated from bgc.errors.ExitCode -->\n", "<!-- /exit-codes -->"
    assert start in text and end in text, f"{doc} lacks the generated exit-code table"
    table = text.split(start, 1)[1].split(end, 1)[0]
    assert table == exit_code_table(), f"{doc}: paste bgc.errors.exit_code_table() between the markers"


def test_readme_policies_are_in_fmt_layout() -> None:
    """What a reader copies from the README is what `bgc fmt` would write."""
    from bgc.core.policy.format import format_text

    policies = [block for block in blocks(ROOT / "README.md") if block.lang == "bgp"]
    assert policies
    for block in policies:
        assert format_text(block.body, block.id) == block.body, f"{block.id} is not in `bgc fmt` layout"


@pytest.mark.parametrize("doc", DOCS, ids=[doc.name for doc in DOCS])
def test_docs_stand_on_their_own(doc: Path) -> None:
    """No "DESIGN §2": the design brief is not shipped, so a reader could not follow the reference."""
    assert not re.search(r"\bDESIGN\b", doc.read_text(encoding="utf-8")), f"{doc.name} cites the design brief"
