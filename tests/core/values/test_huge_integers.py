"""Integers too long for Python to convert are "integer out of range" at their place, everywhere.

Python refuses to turn a decimal literal of more than 4,300 digits into an int, with a message of
its own ("Exceeds the limit (4300 digits) for integer string conversion…") that leaked into
bgc's errors, or escaped as an internal error when the value was a YAML key, a TOML setting or an
approvals count. The class is every place bgc turns untrusted text into an integer — YAML (every
YAML 1.1 integer form, plain or tagged ``!!int``, as a value, a list item, a nested value and a
key), JSON, a TOML configuration, a policy's ``approvals N of`` — with literals just past the limit
and far past it. Each must be a located "out of range" error, exit 2, with no trace of Python's
message. YAML scalars tagged with a type their text is not (``!!int ""``, ``!!bool maybe``) are
located errors too, not internal ones.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.samples import PROMPT, bgc

LEAKS = ("Exceeds the limit", "set_int_max_str_digits", "internal error", "Traceback", "invalid literal")

DIGITS = (4301, 5001, 100_000)
"""Just past Python's limit, the issue's example, far past."""

YAML_FORMS = {
    "decimal": lambda n: "9" * n,
    "negative": lambda n: "-" + "9" * n,
    "plus": lambda n: "+" + "9" * n,
    "underscore": lambda n: "1_" + "1" * n,
    "sexagesimal": lambda n: "1" * n + ":30",
    "tagged": lambda n: "!!int " + "9" * n,
    "tagged-quoted": lambda n: '!!int "' + "9" * n + '"',
    # bases Python converts without a limit: out of range long before
    "hex": lambda n: "0x" + "f" * (n // 40),
    "octal": lambda n: "0" + "7" * (n // 40),
    "binary": lambda n: "0b" + "1" * (n // 40),
    "sexagesimal-parts": lambda n: "1" + ":59" * (n // 120),
}
"""Every integer form YAML 1.1 resolves, written with about ``n`` digits (PyYAML's scanner is pure
Python, so only the forms Python itself refuses to convert are written thousands of digits long)."""

# (how the literal X sits in `payload`, offset of X from the start of the payload's value)
YAML_PLACES = {
    "value": ("X", 0),
    "list-item": ("[1, X]", 4),
    "nested": ("{a: X}", 4),
    "key": ("{? X : 1}", 3),
}


def order(payload: str) -> str:
    return f'intent:\n  kind: patch.apply\n  payload: {payload}\nrequests: []\norigin: {{model: m, prompt: "{PROMPT}"}}\n'


def test_yaml_integers_of_every_form_at_every_place(tmp_path: Path) -> None:
    expected = {}
    for form, literal in YAML_FORMS.items():
        for digits in DIGITS[:2]:
            for place, (shape, offset) in YAML_PLACES.items():
                name = f"{form}-{digits}-{place}.yaml"
                expected[name] = (order(shape.replace("X", literal(digits))), 12 + offset)
    for name, (text, col) in expected.items():
        (tmp_path / name).write_text(text)
        result = bgc("digest", str(tmp_path / name))
        assert result.exit_code == 2, (name, result.output[:300])
        assert f"{name}:3:{col}: error: intent.payload" in result.output, (name, result.output[:300])
        assert "integer out of range" in result.output, (name, result.output[:300])
        assert not any(leak in result.output for leak in LEAKS), (name, result.output[:300])


def test_yaml_integers_in_range_still_load(tmp_path: Path) -> None:
    for literal in ("0x" + "0" * 5000 + "1", "0b" + "0" * 200 + "1", "1_000", "0777", "-18446744073709551616", "1:30"):
        (tmp_path / "o.yaml").write_text(order(literal))
        assert bgc("digest", str(tmp_path / "o.yaml")).exit_code == 0, literal


@pytest.mark.parametrize("digits", DIGITS)
def test_json_integers_at_every_place(tmp_path: Path, digits: int) -> None:
    for literal in ("9" * digits, "-" + "9" * digits):
        for shape, offset in (("X", 0), ("[1, X]", 4), ('{"a": X}', 6)):
            text = '{"intent": {"kind": "patch.apply",\n"payload": ' + shape.replace("X", literal) + "}}"
            (tmp_path / "o.json").write_text(text)
            result = bgc("digest", str(tmp_path / "o.json"))
            assert result.exit_code == 2
            assert f"o.json:2:{12 + offset}: error: intent.payload" in result.output, result.output[:300]
            assert "integer out of range" in result.output and not any(leak in result.output for leak in LEAKS)


@pytest.mark.parametrize(
    "tagged",
    ['!!int ""', '!!int "abc"', '!!int "-"', '!!int "0x"', '!!int "1:"', '!!float ""', '!!float "abc"',
     '!!bool "maybe"', '!!null "x"', "0x_", "-0b__", '!!int "0x_"'],
)  # fmt: skip
def test_yaml_scalars_that_are_not_what_their_tag_needs(tmp_path: Path, tagged: str) -> None:
    (tmp_path / "o.yaml").write_text(order(tagged))
    result = bgc("digest", str(tmp_path / "o.yaml"))
    assert result.exit_code == 2
    assert "o.yaml:3:12: error: intent.payload: !!" in result.output, result.output
    assert not any(leak in result.output for leak in LEAKS) and "could not convert" not in result.output


@pytest.mark.parametrize("digits", DIGITS)
@pytest.mark.parametrize("form", ["decimal", "hex", "negative"])
def test_toml_configuration_integers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, form: str, digits: int) -> None:
    literal = YAML_FORMS[form](digits)
    (tmp_path / "bgc.toml").write_text(f'policy = "p.bgp"\nmode = {literal}\n')
    (tmp_path / "p.bgp").write_text("allow fs:read:/**\n")
    monkeypatch.chdir(tmp_path)
    result = bgc("check")
    assert result.exit_code == 2
    assert "bgc.toml:2:8: error:" in result.output, result.output[:300]
    # out of TOML's range (decimal), or read and of the wrong kind (tomllib takes long hex)
    named = "integer out of range" in result.output or "mode: expected non-empty text, got a number" in result.output
    assert named and not any(leak in result.output for leak in LEAKS), result.output[:300]


@pytest.mark.parametrize("count", ["9" * 4301, "9" * 100_000, "1" + "0" * 20, "0" * 5000])
def test_approval_counts(tmp_path: Path, count: str) -> None:
    (tmp_path / "p.bgp").write_text(f"ask fs:write:/x approvals {count} of [alice, bob]\n")
    result = bgc("check", str(tmp_path / "p.bgp"))
    assert result.exit_code == 2
    assert "p.bgp:1:27: error[BGC007]:" in result.output and "count must be between 1 and the number of names" in result.output
    assert not any(leak in result.output for leak in LEAKS)


def test_an_approval_count_with_leading_zeros_is_its_value(tmp_path: Path) -> None:
    (tmp_path / "p.bgp").write_text("ask fs:write:/x approvals " + "0" * 5000 + "2 of [alice, bob]\n")
    assert bgc("check", str(tmp_path / "p.bgp")).exit_code in (0, 1)
