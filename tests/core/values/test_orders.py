"""Work-order values, canonical ids and the order loaders (issue 2)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import cbor2
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bgc.core.values import canonical
from bgc.core.values.documents import DocumentError, load_order, parse_document
from bgc.core.values.model import Digest, GrantAtom, GrantSet, Intent, ModelError, ProposalOrigin, ToolCall, WorkOrder
from tests.samples import PROMPT, examples, walk

ROOT = Path(__file__).resolve().parents[3]
ORDERS = ROOT / "examples" / "orders"


def order_data(**changes: object) -> dict:
    data = {
        "intent": {"kind": "patch.apply", "payload": "fix the off-by-one"},
        "calls": [{"tool": "fs.write", "server": "local", "params": {"path": "/src/parse.py"}}],
        "requests": ["fs:write:/src/**"],
        "origin": {"model": "claude-opus-5", "parents": [], "prompt": PROMPT},
    }
    data.update(changes)
    return data


# --- values -----------------------------------------------------------------------------------


def test_digest_of_and_parse() -> None:
    digest = Digest.of(b"prompt")
    assert str(digest) == "sha256:cf07194ee232eb531e15f690000d19846dea69cf05504782658afcfacb9228a2"  # a known vector, not recomputed
    for bad in ("sha256:" + "AB" * 32, "sha256:abc", "md5:" + "ab" * 32, "sha256:" + "ab" * 32 + " ", 7):
        with pytest.raises(ModelError):
            Digest(bad)  # type: ignore[arg-type]


def test_atom_splits_on_first_two_colons_only() -> None:
    atom = GrantAtom.parse("net:connect:https://api.example.com/**")
    assert (atom.resource, atom.action, atom.pattern) == ("net", "connect", "https://api.example.com/**")
    assert str(atom) == "net:connect:https://api.example.com/**"


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("fs:write", "resource:action:pattern"),
        ("FS:write:/a", "resource must match"),
        ("*:write:/a", "resource must match"),
        ("fs:*:/a", "action must match"),
        ("fs:write:/src/[a", "unclosed ["),
        ("fs:write:", "bad pattern"),
        ("fs:write:/src/../etc", "'..'"),
        ("fs:write:/src/./a", "'.'"),
    ],
)
def test_bad_atoms_are_rejected(text: str, fragment: str) -> None:
    with pytest.raises(ModelError, match=None) as caught:
        GrantAtom.parse(text)
    assert fragment in caught.value.message


def test_grant_set_sorted_without_duplicates() -> None:
    atoms = [GrantAtom.parse(t) for t in ("fs:write:/b", "fs:read:/a", "fs:write:/b", "fs:read:/a")]
    assert GrantSet.of(atoms).to_data() == ["fs:read:/a", "fs:write:/b"]


def test_values_are_immutable() -> None:
    call = ToolCall("fs.write", None, {"path": "/a", "tags": ["x"]})
    with pytest.raises(AttributeError):
        call.tool = "x"  # type: ignore[misc]
    with pytest.raises(TypeError):
        call.params["path"] = "/b"  # type: ignore[index]
    assert call.params["tags"] == ("x",)
    assert hash(call) == hash(ToolCall("fs.write", None, {"tags": ["x"], "path": "/a"}))


@pytest.mark.parametrize(
    ("changes", "message", "path"),
    [
        ({"requests": True}, "expected a list, got true", ("requests",)),
        ({"requests": "fs:write:/a"}, "expected a list, got text", ("requests",)),
        ({"requests": 1.5}, "expected a list, got a number", ("requests",)),
        ({"intent": ["x"]}, "expected a map, got a list", ("intent",)),
        ({"intent": None}, "expected a map, got null", ("intent",)),
    ],
)
def test_a_value_of_the_wrong_kind_is_named_in_the_order_s_words(
    changes: dict, message: str, path: tuple[str, ...]
) -> None:
    """The same words as a template parameter of the wrong kind (canonical.kind_name)."""
    with pytest.raises(ModelError) as caught:
        WorkOrder.from_data(order_data(**changes))
    assert (caught.value.message, caught.value.path) == (message, path)


def test_call_params_of_the_wrong_kind_are_named_in_the_order_s_words() -> None:
    with pytest.raises(ModelError) as caught:
        ToolCall("fs.write", None, b"x")  # type: ignore[arg-type]
    assert (caught.value.message, caught.value.path) == ("expected a map, got bytes", ("params",))


def test_intent_kind_must_be_dotted() -> None:
    with pytest.raises(ModelError) as caught:
        Intent("patch apply", "x")
    assert caught.value.path == ("kind",)


def test_order_id_is_typed_envelope_digest() -> None:
    order = WorkOrder.from_data(order_data())
    expected = canonical.digest_text(cbor2.dumps(["bgc.WorkOrder", 1, order.to_data()], canonical=True))
    assert str(order.id()) == expected


def test_int_and_float_are_different_values() -> None:
    one = WorkOrder.from_data(order_data(intent={"kind": "a.b", "payload": 1}))
    one_float = WorkOrder.from_data(order_data(intent={"kind": "a.b", "payload": 1.0}))
    assert one.id() != one_float.id()


# --- the bundled examples ---------------------------------------------------------------------


def test_example_in_three_formats_has_one_id() -> None:
    ids = {load_order(str(ORDERS / f"fix-bug.{ext}")).id() for ext in ("yaml", "json", "cbor")}
    assert len(ids) == 1


def test_every_example_order_loads() -> None:
    examples = sorted(ORDERS.glob("*.yaml"))
    assert len(examples) >= 6
    for path in examples:
        assert load_order(str(path)).requests


@pytest.mark.e2e
def test_ids_do_not_depend_on_hash_seed() -> None:
    code = "from bgc.core.values.documents import load_order; import sys; print(load_order(sys.argv[1]).id())"
    outputs = {
        subprocess.run(
            [sys.executable, "-c", code, str(ORDERS / "upgrade-dependency.yaml")],
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for seed in ("0", "1", "4242")
    }
    assert len(outputs) == 1


# --- property tests: stability and sensitivity -------------------------------------------------

names = st.from_regex(r"[a-z][a-z0-9]{0,5}(\.[a-z][a-z0-9]{0,5}){0,2}", fullmatch=True)
scalars = st.one_of(
    st.none(), st.booleans(), st.integers(canonical.MIN_INT, canonical.MAX_INT), st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=8)
)
payloads = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=5), inner, max_size=3)),
    max_leaves=8,
)
segments = st.from_regex(r"[a-z0-9_]{1,6}|\*|\*\*|[a-z]\*\.py", fullmatch=True)
patterns = st.lists(segments, min_size=1, max_size=4).map(lambda segs: "/" + "/".join(segs))
atoms = st.tuples(st.sampled_from(["fs", "net", "proc"]), st.sampled_from(["read", "write"]), patterns).map(
    lambda t: ":".join(t)
)
digests = st.binary(max_size=8).map(lambda b: str(Digest.of(b)))
orders = st.fixed_dictionaries(
    {
        "intent": st.fixed_dictionaries({"kind": names, "payload": payloads}),
        "calls": st.lists(
            st.fixed_dictionaries(
                {
                    "tool": names,
                    "server": st.one_of(st.none(), st.sampled_from(["local", "remote"])),
                    "params": st.dictionaries(st.text(max_size=5), payloads, max_size=3),
                }
            ),
            max_size=3,
        ),
        "requests": st.lists(atoms, min_size=1, max_size=4),
        "origin": st.fixed_dictionaries(
            {"model": st.sampled_from(["claude-opus-5", "gpt-6"]), "parents": st.lists(digests, max_size=2), "prompt": digests}
        ),
    }
)


def shuffled(value: object, rnd: st.DataObject) -> object:
    """The same data with every map's keys in a random order."""
    if isinstance(value, dict):
        keys = rnd.draw(st.permutations(list(value)))
        return {key: shuffled(value[key], rnd) for key in keys}
    if isinstance(value, list):
        return [shuffled(item, rnd) for item in value]
    return value


@settings(max_examples=examples(30, thorough=600), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(orders, st.data())
def test_id_stable_across_formats_and_key_order(data: dict, rnd: st.DataObject) -> None:
    reference = WorkOrder.from_data(data).id()
    variant = shuffled(data, rnd)
    as_json = json.dumps(variant, indent=rnd.draw(st.sampled_from([None, 1, 4]))).encode()
    as_yaml = yaml.safe_dump(variant, sort_keys=False).encode()
    as_cbor = cbor2.dumps(variant)
    for raw, fmt in ((as_json, "json"), (as_yaml, "yaml"), (as_cbor, "cbor")):
        loaded = parse_document(raw, f"order.{fmt}", fmt).build(WorkOrder.from_data)
        assert loaded.id() == reference, fmt


def mutations(data: dict) -> list[dict]:
    """One changed order per field of ``data``: every field must reach the id."""
    out = []

    def changed(path: tuple, value: object) -> dict:
        copy = json.loads(json.dumps(data))
        target = copy
        for part in path[:-1]:
            target = target[part]
        target[path[-1]] = value
        return copy

    out.append(changed(("intent", "kind"), data["intent"]["kind"] + ".x"))
    out.append(changed(("intent", "payload"), [data["intent"]["payload"]]))
    out.append(changed(("calls",), data["calls"] + [{"tool": "fs.read", "params": {}}]))
    out.append(changed(("requests",), data["requests"] + ["fs:read:/zz-new"]))
    out.append(changed(("origin", "model"), data["origin"]["model"] + "-b"))
    out.append(changed(("origin", "parents"), data["origin"]["parents"] + [PROMPT]))
    out.append(changed(("origin", "prompt"), str(Digest.of(data["origin"]["prompt"].encode()))))
    if data["calls"]:
        call = data["calls"][0]
        out.append(changed(("calls", 0, "tool"), call["tool"] + ".x"))
        out.append(changed(("calls", 0, "server"), "elsewhere" if call["server"] != "elsewhere" else None))
        out.append(changed(("calls", 0, "params"), {**call["params"], "zz-new": 1}))
    return out


@settings(max_examples=examples(20, thorough=400), deadline=None)
@given(orders)
def test_id_changes_under_every_field_change(data: dict) -> None:
    reference = WorkOrder.from_data(data).id()
    for mutated in mutations(data):
        assert WorkOrder.from_data(mutated).id() != reference


@settings(max_examples=examples(30, thorough=600), deadline=None)
@given(orders)
def test_to_data_round_trips(data: dict) -> None:
    order = WorkOrder.from_data(data)
    assert WorkOrder.from_data(order.to_data()) == order


def test_origin_parents_are_digests() -> None:
    origin = ProposalOrigin("m", (Digest.of(b"p"),), Digest.of(b"q"))
    assert origin.to_data()["parents"] == [str(Digest.of(b"p"))]



# --- the data model's edges: text, integers, tags ------------------------------------------------


@pytest.mark.parametrize(
    ("value", "path", "message"),
    [
        ({"a": ["ok", "x\ud800y"]}, ("a", 1), "text is not valid Unicode (lone surrogate U+D800)"),
        ({"a": {"\udfff": 1}}, ("a",), "map key '\\udfff' is not valid Unicode (lone surrogate U+DFFF)"),
        ({"a": [canonical.MAX_INT + 1]}, ("a", 0), "integer out of range for the canonical encoding"),
        ({"a": canonical.MIN_INT - 1}, ("a",), "integer out of range for the canonical encoding"),
    ],
)
def test_check_value_refuses_with_the_path(value: object, path: tuple, message: str) -> None:
    with pytest.raises(canonical.DataModelError) as caught:
        canonical.check_value(value)
    assert caught.value.path == path
    assert caught.value.message.startswith(message)
    with pytest.raises(canonical.DataModelError):
        canonical.encode(value)


def test_extreme_integers_encode_without_a_tag() -> None:
    assert canonical.encode(canonical.MAX_INT) == bytes.fromhex("1bffffffffffffffff")
    assert canonical.encode(canonical.MIN_INT) == bytes.fromhex("3bffffffffffffffff")
    assert canonical.encode("é\U0001f600") == b"\x66" + "é\U0001f600".encode("utf-8")  # 6 bytes of text


tricky_text = st.text(alphabet=st.sampled_from('a"\\/\u2028\x85\r\n\té{}[],: '), max_size=6)
json_values = st.recursive(
    st.one_of(scalars, tricky_text),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(tricky_text, inner, max_size=3)),
    max_leaves=10,
)


@settings(max_examples=examples(40, thorough=800), deadline=None)
@given(json_values, st.sampled_from([None, 0, 2]), st.booleans(), st.sampled_from([(",", ":"), (" , ", " :  ")]))
def test_json_locations_point_at_each_value(value: object, indent: int | None, ascii_only: bool, separators: tuple) -> None:
    text = json.dumps(value, indent=indent, ensure_ascii=ascii_only, separators=separators)
    document = parse_document(("\n " + text + " \n").encode(), "doc.json", "json")
    starts = [0]
    for line in document.text.splitlines(keepends=True):  # type: ignore[union-attr]
        starts.append(starts[-1] + len(line))
    decoder = json.JSONDecoder()
    paths = dict(walk(value))
    assert set(document.locations) == set(paths)
    for path, expected in paths.items():
        line, col = document.locations[path]
        found, _ = decoder.raw_decode(document.text, starts[line - 1] + col - 1)  # type: ignore[arg-type]
        assert found == expected and type(found) is type(expected), path


@settings(max_examples=examples(30, thorough=600), deadline=None)
@given(payloads, st.sampled_from([0, 1, 2, 3, 24, 32, 258, 55799, 2**32]))
def test_cbor_tags_are_refused_at_their_offset(before: object, tag: int) -> None:
    untagged = bytes([0x82]) + cbor2.dumps(before) + cbor2.dumps(0)
    assert parse_document(untagged, "doc.cbor", "cbor").data == [before, 0]
    tagged = bytes([0x82]) + cbor2.dumps(before) + cbor2.dumps(cbor2.CBORTag(tag, 0))
    with pytest.raises(DocumentError) as caught:
        parse_document(tagged, "doc.cbor", "cbor")
    assert f"CBOR tags are not allowed (tag {tag} at byte offset {1 + len(cbor2.dumps(before))}" in caught.value.message
