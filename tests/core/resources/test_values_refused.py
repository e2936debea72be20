"""Issue 9, the value model's edges: each class of spelling is generated, not listed by example.

URL hosts and paths (WHATWG), case-insensitive file-system aliases, control characters in
patterns, denies nothing can reach, wildcard templates with unnormalised parameters, and the
``matches`` dialect. Every generated member must never be allowed by the gate, and what a
policy author can get wrong, ``bgc check`` must flag.
"""

from __future__ import annotations

import fnmatch
import itertools
from pathlib import Path

import ada_url
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bgc.core.resources import fs
from bgc.analysis.checks import check_paths
from bgc.core.compiler import Compiler
from bgc.core.gate import Gate
from bgc.core.values.model import ToolCall
from bgc.core.policy.ast import Matches
from bgc.core.policy.loader import parse_policy
from bgc.core.resources import Rejection, normalise
from bgc.core.resources.fs import HFS_IGNORED
from tests.samples import characters_in, examples
from tests.core.test_compiler import order, plan_for

# ---- 1. URL hosts: the host ends where WHATWG ends it -------------------------------------------

HOST_ALLOW = "allow net:connect:https://*.example.com/**\n"
HOST_GATE = Gate([plan_for(HOST_ALLOW, "net:connect:**")])

URL_ALPHABET = ["a", "e", ".", "\\", "/", "@", ":", "?", "#", "%", "2", "5", "E", "C", "[", "]", "1", " ", "\t", "。", "ｅ", "-"]


def _whatwg_host_is_under_example_com(text: str) -> bool:
    """The reference: what a WHATWG parser (ada) says the host is, and no userinfo."""
    try:
        url = ada_url.URL(text)
    except ValueError:
        return False
    return url.protocol == "https:" and not url.username and not url.password and url.hostname.rstrip(".").endswith(".example.com")


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.sampled_from(URL_ALPHABET), max_size=8), st.lists(st.sampled_from(URL_ALPHABET), max_size=4))
def test_a_host_wildcard_allows_only_hosts_whatwg_reads_under_the_domain(before: list[str], after: list[str]) -> None:
    text = "https://" + "".join(before) + ".example.com" + "".join(after) + "/x"
    decision = HOST_GATE.decide("net:connect:" + text)
    if decision.effect == "allow":
        assert _whatwg_host_is_under_example_com(text), text


@pytest.mark.parametrize("cut", ["\\", "/", "?", "#", "@", "%5C", "%2F", "%3F", "%23", ":@", "\t"])
def test_every_character_that_ends_a_host_is_seen_where_whatwg_sees_it(cut: str) -> None:
    decision = HOST_GATE.decide(f"net:connect:https://evil.com{cut}.example.com/x")
    assert decision.effect != "allow", cut


def _spellings_of(host: str) -> list[str]:
    """Every spelling of ``host`` a WHATWG parser reads as ``host``: by class, per character."""
    out = set()
    for index, char in enumerate(host):
        for variant in (char.upper(), f"%{ord(char):02x}", f"%{ord(char):02X}", chr(ord(char) + 0xFEE0) if char.isalnum() else char):
            out.add(host[:index] + variant + host[index + 1 :])
    out |= {host.upper(), host + ".", host.replace(".", "。"), host + ":443", host.upper() + ".:443"}
    return sorted(out)


@pytest.mark.parametrize("host", ["evil.com", "metadata.internal"])
def test_a_host_deny_stops_every_spelling_of_the_host(host: str) -> None:
    gate = Gate([plan_for(f"allow net:connect:**\ndeny net:connect:https://{host}/**\n", "net:connect:**")])
    spellings = _spellings_of(host)
    assert len(spellings) > 20
    for spelling in spellings:
        text = f"https://{spelling}/x"
        try:
            seen = ada_url.URL(text).hostname.rstrip(".")
        except ValueError:
            seen = None
        decision = gate.decide("net:connect:" + text)
        if seen == host:
            assert decision.effect == "deny", text
        assert decision.effect != "allow" or seen != host, text


def test_percent_spellings_of_a_denied_path_never_pass() -> None:
    """Every mix of raw and escaped (either hex case) characters of `admin`: a server decodes them all."""
    gate = Gate([plan_for("allow net:connect:**\ndeny net:connect:https://api.example.com/admin/**\n", "net:connect:**")])
    choices = [(c, f"%{ord(c):02x}", f"%{ord(c):02X}") for c in "admin"]
    spellings = ["".join(combo) for combo in itertools.product(*choices)]
    assert len(spellings) == 3**5
    for spelled in spellings:
        decision = gate.decide(f"net:connect:https://api.example.com/{spelled}/users")
        assert decision.effect == "deny", spelled


@pytest.mark.parametrize(
    "value",
    [
        "https://user@example.com/",
        "https://user:pw@example.com/",
        "https://@example.com/",
        "ftp://example.com/",
        "file:///etc/passwd",
        "javascript:alert(1)",
        "example.com/x",
        "https://exa mple.com/",
        "https://example.com/a%2Fb",
        "https://example.com/a%5cb",
        "https://example.com/a%00b",
        "https://example.com/%252e%252e/x",
        "https://a..b/",
        "https://[::1/",
    ],
)
def test_refused_urls(value: str) -> None:
    assert isinstance(normalise("net", value), Rejection), value
    assert Gate([plan_for("allow net:connect:**\n", "net:connect:**")]).decide("net:connect:" + value).effect == "deny"


@pytest.mark.parametrize(
    ("value", "canonical"),
    [
        ("HTTPS://Example.COM:443/a", "https://example.com/a"),
        ("http://example.com:80", "http://example.com/"),
        ("https://example.com:8443/a?b=%2f#frag", "https://example.com:8443/a?b=%2F"),
        ("https://bücher.example/", "https://xn--bcher-kva.example/"),
        ("https://example.com./%7euser", "https://example.com/~user"),
        ("https://0x7f.0.0.1/", "https://127.0.0.1/"),
        ("https://[0:0::1]:443/", "https://[::1]/"),
        ("wss://Example.com/socket", "wss://example.com/socket"),
    ],
)
def test_canonical_urls(value: str, canonical: str) -> None:
    assert normalise("net", value) == canonical
    assert normalise("net", canonical) == canonical  # idempotent


@settings(max_examples=examples(100), deadline=None)
@given(st.text(alphabet="".join(URL_ALPHABET) + "AZaz09~_", max_size=20))
def test_canonical_form_is_a_fixed_point(tail: str) -> None:
    value = normalise("net", "https://" + tail)
    if isinstance(value, str):
        assert normalise("net", value) == value


@pytest.mark.parametrize(
    ("pattern", "why"),
    [
        ("https://EVIL.com/**", "hosts are lower-case"),
        ("https://*.EVIL.com/**", "hosts are lower-case"),
        ("HTTPS://evil.com/**", "lower-case scheme"),
        ("https://evil.com:443/**", "default port"),
        ("https://*.evil.com:443/**", "default port"),
        ("https://*.evil.com:0443/**", "leading zero"),
        ("https://*.evil.com./**", "empty host label"),
        ("https://user@evil.com/**", "userinfo"),
        ("https://evil.com/%7euser/**", "decoded"),
        ("https://evil.com/*/%c3%a9/**", "upper-case"),
        ("https://evil.com/é/**", "percent-encoded"),
        ("https://evil.com/a#b", "written `https://evil.com/a`"),
        ("https://evil.com/*#b", "fragment"),
        ("ftp://evil.com/**", "scheme"),
        ("https://evil.com", "written `https://evil.com/`"),
        ("https://*.evil.com", "always have a path"),
        ("http://[::1]/**", "IPv6"),
        ("https://evil.com:*/Admin%2fx", "refuses `%2f`"),
        ("https://evil.com//x/**", "empty path segment"),
        ("https://evil.com/a;b/**", "`;`"),
    ],
)
def test_check_flags_net_denies_no_canonical_url_reaches(tmp_path: Path, pattern: str, why: str) -> None:
    (tmp_path / "p.bgp").write_text(f'allow net:connect:**\ndeny net:connect:"{pattern}"\n', encoding="utf-8")
    findings = [f for f in check_paths([str(tmp_path / "p.bgp")]).findings if f.rule_id == "BGC107"]
    assert len(findings) == 1 and why in findings[0].message, [f.message for f in findings]


@pytest.mark.parametrize(
    "host", ["*example.com", "api-*.example.com", "a?b.example.com", "a[!x]b.com", "*x.*.com", "[a-z]*example.com", "api.example.*"]
)
def test_check_flags_an_allow_host_wildcard_inside_a_label(tmp_path: Path, host: str) -> None:
    (tmp_path / "p.bgp").write_text(f'allow net:connect:"https://{host}/**"\n', encoding="utf-8")
    assert [f.rule_id for f in check_paths([str(tmp_path / "p.bgp")]).findings] == ["BGC112"]


@pytest.mark.parametrize("host", ["*.example.com", "*", "*.*.example.com", "api.example.com"])
def test_whole_label_wildcards_are_not_flagged(tmp_path: Path, host: str) -> None:
    (tmp_path / "p.bgp").write_text(f'allow net:connect:"https://{host}/**"\n', encoding="utf-8")
    assert check_paths([str(tmp_path / "p.bgp")]).findings == ()


# ---- denies on URLs cover every scheme, port and query; spellings servers read differently ------


def _dodges(url: str) -> list[str]:
    """Other ways to reach what ``url`` names: scheme, port, query, and path spellings servers merge."""
    scheme, rest = url.split("://")
    host, path = rest.split("/", 1)
    out = [f"{other}://{host}/{path}" for other in ("http", "https", "ws", "wss")]
    out += [f"{scheme}://{host}:{port}/{path}" for port in (1, 80, 443, 8080, 8443, 65535)]
    out += [f"{url}?{query}" for query in ("", "x", "a=b", "next=/a/b", "x=%2F")]
    out += [f"{scheme}://{host}/{path.replace('/', insert, 1)}" for insert in ("//", "/;x/", ";x/") if "/" in path]
    out += [f"{scheme}://{host}/{path}".replace(".", "%u002e", 1), f"{scheme}://{host}/%C0%AE%C0%AE/{path}"]
    return out


@pytest.mark.parametrize(
    ("deny", "target"),
    [
        ("https://evil.com/**", "https://evil.com/x"),
        ("https://*.evil.com/**", "https://a.evil.com/x"),
        ("https://h.com/admin", "https://h.com/admin"),
        ("https://h.com/api/*/delete", "https://h.com/api/7/delete"),
        ("https://h.com/internal/**", "https://h.com/internal/keys"),
    ],
)
@pytest.mark.parametrize("effect", ["deny", "ask"])
def test_a_url_deny_or_ask_is_not_dodged_by_scheme_port_query_or_path_spelling(deny: str, target: str, effect: str) -> None:
    gate = Gate([plan_for(f"allow net:connect:**\n{effect} net:connect:{deny}\n", "net:connect:**")])
    assert gate.decide(f"net:connect:{target}").effect == effect
    for dodge in _dodges(target):
        assert gate.decide(f"net:connect:{dodge}").effect != "allow", dodge


def test_allows_are_never_widened_to_other_schemes_or_ports() -> None:
    gate = Gate([plan_for("allow net:connect:https://api.example.com/**\n", "net:connect:**")])
    assert gate.decide("net:connect:https://api.example.com/v1").effect == "allow"
    for other in ("http://api.example.com/v1", "https://api.example.com:8443/v1", "wss://api.example.com/v1"):
        assert gate.decide(f"net:connect:{other}").effect == "deny", other


@pytest.mark.parametrize(
    ("spelling", "reaches"),
    [
        ("http://[::ffff:169.254.169.254]/latest", "http://169.254.169.254/latest"),
        ("http://[::ffff:a9fe:a9fe]/latest", "http://169.254.169.254/latest"),
        ("http://[0:0:0:0:0:ffff:7f00:1]/", "http://127.0.0.1/"),
    ],
)
def test_ipv4_mapped_ipv6_is_written_as_the_ipv4_address(spelling: str, reaches: str) -> None:
    assert normalise("net", spelling) == reaches


@pytest.mark.parametrize(
    "value",
    ["http://0.0.0.0/", "http://[::]/", "http://[::7f00:1]/", "http://[::169.254.169.254]/", "http://[64:ff9b::a9fe:a9fe]/"]
    + [f"https://{host}/" for host in ("straße.de", "xn--strae-oqa.de", "ς.gr", "a\u200db.com")],
)
def test_hosts_clients_reach_differently_are_refused(value: str) -> None:
    assert isinstance(normalise("net", value), Rejection), value


# ---- 4. case-insensitive file systems: Windows and HFS+ aliases ------------------------------------

CI_POLICY = "filesystem case-insensitive\nallow fs:write:/**\ndeny fs:write:/.git, /.git/**, /secrets, /secrets/**\n"
CI_GATE = Gate([plan_for(CI_POLICY, "fs:write:/**")])


def _aliases(name: str) -> list[str]:
    """Spellings a Windows or HFS+ file system reads as ``name``, generated by class."""
    out = []
    for tail in itertools.product(["", ".", " "], repeat=3):
        if any(tail):
            out.append(name + "".join(tail))
    out += [name + "::$INDEX_ALLOCATION", name + "::$DATA", name + ":stream", name.upper() + "::$index_allocation"]
    short = name.lstrip(".").upper()[:6]
    out += [f"{short}~{digit}" for digit in "123456789"]
    for code in sorted(HFS_IGNORED):
        for index in range(len(name) + 1):
            out.append(name[:index] + chr(code) + name[index:])
    out += [name.upper(), name.title()]
    return out


@pytest.mark.parametrize("name", [".git", "secrets"])
def test_case_insensitive_aliases_of_a_denied_name_are_never_allowed(name: str) -> None:
    aliases = _aliases(name)
    assert len(aliases) > 100
    for alias in aliases:
        for suffix in ("", "/config"):
            decision = CI_GATE.decide(f"fs:write:/{alias}{suffix}")
            assert decision.effect == "deny", (alias, suffix)


def test_aliases_are_refused_only_on_case_insensitive_file_systems() -> None:
    assert normalise("fs", "/a./b") == "/a./b"
    assert isinstance(normalise("fs", "/a./b", case_insensitive=True), Rejection)
    assert normalise("fs", "/src/main.py", case_insensitive=True) == "/src/main.py"
    strict = parse_policy(CI_POLICY, "p.bgp")
    call = ToolCall("fs.write", None, {"path": "/.git./config"})
    policy = parse_policy(CI_POLICY + "tool fs.write needs fs:write:{path}\n", "p.bgp")
    assert strict.case_insensitive
    plan = Compiler(policy).compile(order("fs:write:/**", calls=(call,)))
    assert plan.calls[0].status == "uncovered"


# ---- 3. control characters in patterns; denies nothing can reach -----------------------------------

CONTROLS = list(characters_in("Cc"))


def test_every_control_character_in_a_pattern_is_an_error_with_its_column(tmp_path: Path) -> None:
    from bgc.core.policy.parser import PolicyError

    assert len(CONTROLS) == 65
    for char in CONTROLS:
        if char in "\n\r\x0b\x0c\x1c\x1d\x1e\x85":
            continue  # line breaks: the source-text tests own them
        text = f'deny fs:write:"/.git{char}/**"\n'
        with pytest.raises(PolicyError) as caught:
            parse_policy(text, "p.bgp")
        assert (caught.value.span.line, caught.value.span.col) == (1, 21), repr(char)


def _typos(word: str) -> set[str]:
    out = {word[:i] + word[i + 1] + word[i] + word[i + 2 :] for i in range(len(word) - 1)}  # transpositions
    out |= {word[:i] + word[i + 1 :] for i in range(len(word))}  # deletions
    return {typo for typo in out if typo and typo != word and typo[0].isalpha()}


def test_a_deny_on_a_mistyped_resource_or_action_is_flagged_with_a_suggestion(tmp_path: Path) -> None:
    base = "tool fs.write needs fs:write:{path}\nallow fs:read:/**\nallow net:connect:https://a.example/**\n"
    cases = [("fs", typo) for typo in _typos("write")] + [(typo, "write") for typo in _typos("fs")] + [("file", "write")]
    for resource, action in cases:
        if (resource, action) in {("fs", "read")}:
            continue
        (tmp_path / "p.bgp").write_text(base + f"deny {resource}:{action}:/.git/**\n", encoding="utf-8")
        findings = [f for f in check_paths([str(tmp_path / "p.bgp")]).findings if f.rule_id == "BGC110"]
        assert len(findings) == 1 and findings[0].span.line == 4, (resource, action)
    (tmp_path / "p.bgp").write_text(base + "deny fs:wrtie:/.git/**\n", encoding="utf-8")
    (finding,) = [f for f in check_paths([str(tmp_path / "p.bgp")]).findings if f.rule_id == "BGC110"]
    assert finding.hint == "did you mean `write`?"


def test_denies_on_known_targets_are_not_flagged(tmp_path: Path) -> None:
    text = "tool fs.write needs fs:write:{path}\nallow fs:read:/**\ndeny fs:*:/.git/**\ndeny *:write:/x\ndeny fs:write:/y\n"
    (tmp_path / "p.bgp").write_text(text, encoding="utf-8")
    assert [f.rule_id for f in check_paths([str(tmp_path / "p.bgp")]).findings if f.rule_id == "BGC110"] == []


# ---- 5. every parameter is normalised before it meets a template's wildcards -----------------------

LIST_POLICY = "tool fs.list needs fs:read:{path}/*\nallow fs:read:/src/**\ndeny fs:read:/src/secret, /src/secret/**\n"


def _spellings_of_path(path: str) -> list[str]:
    """``path`` with `//`, `/./` or `/x/../` at any one slash, and trailing slashes, by class."""
    out = {path + "/", path + "//", path + "/."}
    for index, char in enumerate(path):
        if char == "/":
            for insert in ("//", "/./", "/x/../", "/./x/../"):
                out.add(path[:index] + insert + path[index + 1 :])
    return sorted(value for value in out if normalise("fs", value) == path)  # the reference agrees


def test_a_wildcard_template_meets_parameters_normalised() -> None:
    policy = parse_policy(LIST_POLICY, "p.bgp")
    spellings = _spellings_of_path("/src/secret")
    assert len(spellings) > 10
    for spelling in spellings:
        plan = Compiler(policy).compile(order("fs:read:/src/**", calls=(ToolCall("fs.list", None, {"path": spelling}),)))
        (call,) = plan.calls
        assert call.status == "uncovered" and call.needs[0].atom == "fs:read:/src/secret/*", spelling
    ok = Compiler(policy).compile(order("fs:read:/src/**", calls=(ToolCall("fs.list", None, {"path": "/src//lib/"}),)))
    assert ok.calls[0].status == "covered" and ok.calls[0].needs[0].atom == "fs:read:/src/lib/*"


def test_a_dotdot_after_a_template_wildcard_is_refused() -> None:
    policy = parse_policy("tool t needs fs:read:/src/*/{rest}\nallow fs:read:/**\n", "p.bgp")
    plan = Compiler(policy).compile(order("fs:read:/**", calls=(ToolCall("t", None, {"rest": "../../etc"}),)))
    assert plan.calls[0].status == "uncovered" and "wildcard" in plan.calls[0].needs[0].reason


# ---- 6. `matches` reads a field as one segment; proposer-written fields never grant alone --------

@settings(max_examples=examples(150), deadline=None)
@given(st.text(alphabet="ab-/.*?", min_size=1, max_size=6), st.text(alphabet="ab-/.", max_size=10))
def test_matches_agrees_with_fnmatch_on_names(pattern: str, name: str) -> None:
    """fnmatch (no pathname rule, no classes here) is the brute-force reference."""
    expected = fnmatch.fnmatchcase(name, pattern)
    assert Matches("origin.model", pattern, None).evaluate({"origin.model": name}) is expected  # type: ignore[arg-type]


def test_the_docs_example_holds() -> None:
    assert Matches("origin.model", "*-mini", None).evaluate({"origin.model": "openai/gpt-4o-mini"}) is True  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "condition",
    [
        f"{field} {op}"
        for field in ("intent.kind", "origin.model")
        for op in ('== "x.y"', '!= "x.y"', 'in ["x.y"]', 'matches "x*"')
    ]
    + ['intent.kind == "a.b" and origin.model == "m"', 'not (origin.model == "m")', 'intent.kind == "a.b" or origin.model matches "*"']
    + ['intent.kind == "deploy" or call.tool == "x.y"', 'not (call.tool == "x.y" and intent.kind == "a.b")'],
)
def test_an_allow_on_proposer_fields_alone_is_flagged(tmp_path: Path, condition: str) -> None:
    (tmp_path / "p.bgp").write_text(f"allow fs:write:/src/** when {condition}\n", encoding="utf-8")
    assert [f.rule_id for f in check_paths([str(tmp_path / "p.bgp")]).findings] == ["BGC111"]
    (tmp_path / "p.bgp").write_text(f"ask fs:write:/src/** when {condition}\nallow fs:write:/**\n", encoding="utf-8")
    assert "BGC111" not in [f.rule_id for f in check_paths([str(tmp_path / "p.bgp")]).findings]


@settings(max_examples=2000, deadline=None)
@given(st.text(alphabet="/.\\*?[]a\n", max_size=14), st.booleans())
def test_a_plain_fs_pattern_is_handed_back_only_when_reading_it_gives_it_back(text: str, rooted: bool) -> None:
    text = "/" + text if rooted else text
    assert fs.normalise_fs_pattern(text) == fs._read_fs_pattern(text)
