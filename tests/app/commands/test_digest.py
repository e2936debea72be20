"""`bgc digest` and every class of malformed order: exit 2, a located message, no traceback."""

from __future__ import annotations

import json
from pathlib import Path

import cbor2
import pytest

from tests.samples import PROMPT, bgc

ROOT = Path(__file__).resolve().parents[3]
ORDERS = ROOT / "examples" / "orders"

GOOD = f"""\
intent: {{kind: patch.apply, payload: "fix"}}
calls:
  - {{tool: fs.write, server: local, params: {{path: /src/parse.py}}}}
requests: ["fs:write:/src/**"]
origin: {{model: claude-opus-5, parents: [], prompt: "{PROMPT}"}}
"""

GOOD_JSON = f"""\
{{
  "intent": {{"kind": "patch.apply", "payload": "fix"}},
  "requests": ["fs:write:/src/**", "fs:write:/doc/**"],
  "origin": {{"model": "claude-opus-5", "prompt": "{PROMPT}"}}
}}
"""


def cbor_order(payload_hex: str) -> bytes:
    """A CBOR order whose ``intent.payload`` is the raw item ``payload_hex`` (at a known offset)."""
    head = cbor2.dumps({"intent": {"kind": "a.b", "payload": 0}})[:-1]  # drop the placeholder 0
    return head + bytes.fromhex(payload_hex)


def run(*args: str, stdin: bytes | None = None):  # type: ignore[no-untyped-def]
    result = bgc(*args, input=stdin)
    assert "Traceback" not in result.output
    assert not isinstance(result.exception, Exception) or isinstance(result.exception, SystemExit), result.exception
    return result


def test_one_id_three_times() -> None:
    paths = [str(ORDERS / f"fix-bug.{ext}") for ext in ("yaml", "json", "cbor")]
    result = run("digest", *paths)
    assert result.exit_code == 0
    lines = result.output.splitlines()
    assert len(lines) == 3
    assert len({line.split()[0] for line in lines}) == 1
    assert [line.split("  ", 1)[1] for line in lines] == paths
    assert lines[0].startswith("sha256:")


def test_json_format() -> None:
    result = run("digest", "--format", "json", str(ORDERS / "fix-bug.yaml"))
    assert result.exit_code == 0
    (entry,) = json.loads(result.output)
    assert entry["file"].endswith("fix-bug.yaml") and entry["id"].startswith("sha256:")


def test_stdin_with_input_format() -> None:
    from_file = run("digest", str(ORDERS / "fix-bug.yaml")).output.split()[0]
    from_stdin = run("digest", "-", "--input-format", "cbor", stdin=(ORDERS / "fix-bug.cbor").read_bytes())
    assert from_stdin.exit_code == 0
    assert from_stdin.output.split()[0] == from_file


def write(tmp_path: Path, name: str, content: str | bytes) -> str:
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return str(path)


BOMB = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
    f"*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n"
    for i in range(8)
)

# (file name, content, expected location suffix after the path, message fragment)
MALFORMED = [
    ("syntax.yaml", "intent: {kind: patch.apply\nrequests: []\n", ":2:", "invalid YAML"),
    ("syntax.json", '{"intent": {"kind": "a.b"},\n  "requests": [1,,]}', ":2:", "invalid JSON"),
    ("dup.yaml", GOOD + "requests: []\n", ":6:1", "duplicate key 'requests'"),
    ("dup.json", '{"requests": [], "requests": []}', ":1:18", "duplicate key 'requests'"),
    ("tag.yaml", GOOD.replace('"fix"', "!!python/object/apply:os.system [ls]"), ":1:", "tag"),
    ("custom-tag.yaml", GOOD.replace('"fix"', "!secret x"), ":1:", "tag"),
    ("merge.yaml", "base: &b {kind: a.b}\nintent:\n  <<: *b\n", ":3:3", "merge keys"),
    ("bomb.yaml", BOMB, ":", "alias expansion"),
    ("deep.yaml", "intent: " + "[" * 100 + "]" * 100 + "\n", ":1:", "nesting deeper"),
    ("deep.json", '{"intent": ' + "[" * 5000 + "]" * 5000 + "}", "", "nesting deeper"),
    ("nan.yaml", GOOD.replace('"fix"', ".nan"), ":1:", "intent.payload: nan is not a finite number"),
    ("inf.json", '{"intent": {"kind": "a.b", "payload": Infinity}}', ":1:39", "not a finite number"),
    ("latin1.yaml", GOOD.replace('"fix"', '"caf\xe9"').encode("latin-1"), ":1:", "not valid UTF-8"),
    ("empty.yaml", "", "", "empty document"),
    ("list.yaml", "- a\n- b\n", ":1:1", "expected a map, got a list"),
    ("missing.yaml", GOOD.replace('requests: ["fs:write:/src/**"]\n', ""), ":1:", "missing required field 'requests'"),
    ("unknown.yaml", GOOD + "grants: []\n", ":6:", "unknown field 'grants'"),
    ("atom.yaml", GOOD.replace('["fs:write:/src/**"]', '["fs:read:/a", "fs:write:/b",\n  "fs-write"]'), ":5:3", "requests[2]"),
    ("pattern.yaml", GOOD.replace('"fs:write:/src/**"', '"fs:write:/src/[ab"'), ":4:", "unclosed ["),
    ("dotdot.yaml", GOOD.replace('"fs:write:/src/**"', '"fs:write:/src/../etc/**"'), ":4:", "'..'"),
    ("wildres.yaml", GOOD.replace('"fs:write:/src/**"', '"*:write:/src/**"'), ":4:", "resource must match"),
    ("kind.yaml", GOOD.replace("patch.apply", "'patch apply'"), ":1:", "intent.kind: expected a dotted name"),
    ("prompt.yaml", GOOD.replace(PROMPT, "sha256:xyz"), ":5:", "origin.prompt: expected a digest"),
    ("parent.yaml", GOOD.replace("parents: []", "parents: [nope]"), ":5:", "origin.parents[0]"),
    ("params.yaml", GOOD.replace("{path: /src/parse.py}", "[/src/parse.py]"), ":3:", "calls[0].params: expected a map"),
    ("reqs.yaml", GOOD.replace('["fs:write:/src/**"]', "fs:write:/src/**"), ":4:", "requests: expected a list"),
    ("date.yaml", GOOD.replace('"fix"', "{when: 2026-01-01, at: 2026-01-01T10:00:00}"), "", None),
    # lone surrogates: text must be Unicode scalar values (DESIGN §1: valid UTF-8)
    ("surrogate.json", GOOD_JSON.replace('"fix"', '"ok \\ud800"'), ":2:48", "intent.payload: text is not valid Unicode (lone surrogate U+D800)"),
    ("surrogate.yaml", GOOD.replace('"fix"', '"\\udfff"'), ":1:38", "intent.payload: text is not valid Unicode (lone surrogate U+DFFF)"),
    ("surrogate-key.json", GOOD_JSON.replace('"fix"', '{"\\udc00": 1}'), ":2:49", "intent.payload: map key '\\udc00' is not valid Unicode"),
    ("surrogate-key.yaml", GOOD.replace('"fix"', '{"\\udc00": 1}'), ":1:39", "intent.payload: map key '\\udc00' is not valid Unicode"),
    ("surrogate-dup.json", '{"\\ud800": {"a": 1, "a": 2}}', ":1:2", "map key '\\ud800' is not valid Unicode"),
    ("surrogate-dup.yaml", '"\\ud800": {a: 1, a: 2}\n', ":1:1", "map key '\\ud800' is not valid Unicode"),
    # JSON semantic errors are located like YAML ones
    ("atom.json", GOOD_JSON.replace('"fs:write:/doc/**"', '"fs-write"'), ":3:36", "requests[1]: expected an atom"),
    ("kind.json", GOOD_JSON.replace('"patch.apply"', '\n    "patch apply"'), ":3:5", "intent.kind: expected a dotted name"),
    ("dup-nested.json", GOOD_JSON.replace('"fix"}', '"fix",\n  "kind": "b.c"}'), ":3:3", "intent.kind: duplicate key 'kind'"),
    ("dup-escaped.json", '{"a": 1,\n "\\u0061": 2}', ":2:2", "a: duplicate key 'a'"),
    ("huge-float.json", GOOD_JSON.replace('"fix"', "[1, 1e400]"), ":2:52", "intent.payload[1]: inf is not a finite number"),
    ("nan.json", GOOD_JSON.replace('"fix"', "NaN"), ":2:48", "intent.payload: nan is not a finite number"),
    ("neg-inf.json", GOOD_JSON.replace('"fix"', "-Infinity"), ":2:48", "intent.payload: -inf is not a finite number"),
    # integers beyond CBOR's untagged range (cbor2 would write a bignum tag)
    ("bigint.json", GOOD_JSON.replace('"fix"', "18446744073709551616"), ":2:48", "intent.payload: integer out of range for the canonical encoding"),
    ("negint.json", GOOD_JSON.replace('"fix"', "-18446744073709551617"), ":2:48", "integer out of range"),
    ("hugeint.json", GOOD_JSON.replace('"fix"', "-" + "9" * 5000), ":2:48", "integer out of range"),
    ("bigint.yaml", GOOD.replace('"fix"', "0x10000000000000000"), ":1:38", "intent.payload: integer out of range"),
    ("maxint.json", GOOD_JSON.replace('"fix"', "[18446744073709551615, -18446744073709551616]"), "", None),
    # CBOR tags, whether cbor2 would decode them itself or not
    ("epoch.cbor", cbor_order("c11a514b67b0"), "", "CBOR tags are not allowed (tag 1 at byte offset 26, an epoch datetime)"),
    ("bignum.cbor", cbor_order("c249010000000000000000"), "", "CBOR tags are not allowed (tag 2 at byte offset 26, a bignum)"),
    ("selfdescribe.cbor", bytes.fromhex("d9d9f7") + cbor2.dumps({"a": 1}), "", "CBOR tags are not allowed (tag 55799 at byte offset 0"),
    ("deeptag.cbor", cbor_order("83" + "4401020304" + "4278c1" + "a1616ad82001"), "", "(tag 32 at byte offset 38)"),
    ("trailing.cbor", cbor2.dumps({"a": 1}) + b"\x00", "", "bytes after the first value"),
    ("truncated.cbor", cbor2.dumps({"intent": {"kind": "a.b"}})[:-3], "", "invalid CBOR"),
    ("indefinite.cbor", bytes.fromhex("bf616101ff"), "", "indefinite"),
    ("dupkey.cbor", bytes.fromhex("a2616101616102"), "", "invalid CBOR"),
    ("datetime.cbor", bytes.fromhex("a166696e74656e74c074323031332d30332d32315432303a30343a30305a"), "", "datetime"),
    ("order.txt", GOOD, "", "cannot tell the format"),
]


@pytest.mark.parametrize(("name", "content", "where", "fragment"), MALFORMED, ids=[m[0] for m in MALFORMED])
def test_malformed_orders_exit_2_with_location(tmp_path: Path, name: str, content: str | bytes, where: str, fragment: str | None) -> None:
    path = write(tmp_path, name, content)
    result = run("digest", path)
    if fragment is None:  # dates stay strings: the order is fine
        assert result.exit_code == 0, result.output
        return
    assert result.exit_code == 2, result.output
    message = result.stderr if hasattr(result, "stderr") else result.output
    assert message.startswith(path + where), message
    assert fragment in message, message
    assert result.stdout == ""


def test_missing_file_and_directory(tmp_path: Path) -> None:
    result = run("digest", str(tmp_path / "nope.yaml"))
    assert result.exit_code == 2 and "no such file" in result.stderr
    assert run("digest", str(tmp_path) + "/x.yaml").exit_code == 2


def test_huge_file(tmp_path: Path) -> None:
    path = tmp_path / "huge.yaml"
    path.write_bytes(b"#" * (9 * 1024 * 1024))
    result = run("digest", str(path))
    assert result.exit_code == 2 and "larger than 8 MiB" in result.stderr


def test_stdin_format_is_sniffed_and_a_wrong_guess_names_the_option() -> None:
    by_file = run("digest", str(ORDERS / "fix-bug.yaml")).stdout.split()[0]
    for name in ("fix-bug.yaml", "fix-bug.json", "fix-bug.cbor"):
        result = run("digest", "-", stdin=(ORDERS / name).read_bytes())
        assert result.exit_code == 0 and result.stdout.split()[0] == by_file, name
    flow_yaml = run("digest", "-", stdin=b"{intent: {kind: a.b, payload: 1}, requests: [], origin: {model: m}}")
    assert flow_yaml.exit_code == 2 and "stdin was read as json" in flow_yaml.stderr and "--input-format" in flow_yaml.stderr


def test_nothing_printed_when_one_file_fails(tmp_path: Path) -> None:
    bad = write(tmp_path, "bad.yaml", "intent: [")
    result = run("digest", str(ORDERS / "fix-bug.yaml"), bad)
    assert result.exit_code == 2
    assert result.stdout == ""


def test_caret_under_the_column(tmp_path: Path) -> None:
    path = write(tmp_path, "atom.yaml", GOOD.replace('["fs:write:/src/**"]', '["fs-write"]'))
    lines = run("digest", path).stderr.splitlines()
    assert lines[0] == f"{path}:4:12: error: requests[0]: expected an atom 'resource:action:pattern', got 'fs-write'"
    assert lines[1] == '  requests: ["fs-write"]'
    assert lines[2] == "  " + " " * 11 + "^"


def test_json_error_quotes_the_line_with_a_caret(tmp_path: Path) -> None:
    path = write(tmp_path, "atom.json", GOOD_JSON.replace('"fs:write:/doc/**"', '"fs-write"'))
    result = run("digest", path)
    assert result.exit_code == 2
    lines = result.stderr.splitlines()
    assert lines[0] == f"{path}:3:36: error: requests[1]: expected an atom 'resource:action:pattern', got 'fs-write'"
    assert lines[1] == '    "requests": ["fs:write:/src/**", "fs-write"],'
    assert lines[2] == "  " + " " * 35 + "^"


def test_version_and_help() -> None:
    assert run("--version").output.startswith("bgc ")
    assert "content id" in run("digest", "--help").output
