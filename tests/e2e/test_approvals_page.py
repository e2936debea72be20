"""`bgc approvals serve` over HTTP, as a browser or an attacker's page speaks to it: the token,
the CSRF token, the origin and host checks, what an answer may be, and what the page shows.

The same flow in a real browser is tests/e2e/test_approvals_browser.py."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from bgc.app.approvals_page import HIDDEN, redact
from bgc.core.values.canonical import digest_text
from bgc.runtime.approvals import load_request, stored_standing
from bgc.runtime.store import open_store
from tests.e2e.approvals_support import HeldCall, People, Served, ask, people, serving
from tests.samples import bgc
from tests.store_support import write_directly


@pytest.fixture
def crowd(tmp_path: Path) -> People:
    return people(tmp_path)


def csrf_of(page: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', page)
    assert found, page
    return found.group(1)


def answer(served: Served, cookie: str, request: str, decision: str, csrf: str, **headers: str) -> tuple[int, str]:
    body = f"csrf={csrf}&request={request}&decision={decision}"
    sent = {"Cookie": cookie, "Content-Type": "application/x-www-form-urlencoded", "Origin": served.origin, **headers}
    status, _, text = served.http("POST", "/answer", body, sent)
    return status, text


def state(store: str, crowd: People, request: str) -> str:
    opened = open_store(store, create=False)
    try:
        loaded = load_request(opened, request)
        assert loaded is not None
        return stored_standing(opened, loaded[0], loaded[1], crowd.trusted(), int(time.time())).state
    finally:
        opened.close()


def approvers(store: str, request: str) -> list[str]:
    """Who has an answer kept for ``request``, read from the store itself."""
    return [row[0] for row in write_directly(store, "SELECT approver FROM bgc_answers WHERE request = ? ORDER BY approver",
                                             request)]  # fmt: skip


def test_without_its_token_nothing_is_served(store_location: str, crowd: People) -> None:
    ask(store_location, crowd, "/src/release/v1")
    with serving(store_location, crowd, "alice") as served:
        for path in ("/", "/list", "/events", "/ledger", "/rule?request=x", "/?token=not-the-token"):
            status, _, text = served.http("GET", path)
            assert status == 403, path
            assert "release" not in text
        status, _, _ = served.http("GET", "/", headers={"Cookie": "bgc-approvals-1=guess"})
        assert status == 403


def test_a_page_elsewhere_cannot_reach_it_through_another_host_name(store_location: str, crowd: People) -> None:
    ask(store_location, crowd, "/src/release/v1")
    with serving(store_location, crowd, "alice") as served:
        cookie = served.cookie()
        status, _, _ = served.http("GET", "/", headers={"Cookie": cookie, "Host": f"evil.example:{served.address[1]}"})
        assert status == 403


def test_the_token_sets_a_strict_cookie_and_leaves_the_address_bar(store_location: str, crowd: People) -> None:
    with serving(store_location, crowd, "alice") as served:
        status, headers, _ = served.http("GET", "/?" + served.url.split("?")[1])
        assert status == 303 and headers["location"] == "/"
        attributes = [part.strip() for part in headers["set-cookie"].split(";")]
        assert "HttpOnly" in attributes and "SameSite=Strict" in attributes
        status, headers, _ = served.http("GET", "/", headers={"Cookie": attributes[0]})
        assert status == 200
        csp = headers["content-security-policy"]
        assert "default-src 'none'" in csp and "script-src 'self'" in csp and "frame-ancestors 'none'" in csp
        assert "unsafe-inline" not in csp


def test_two_people_approve_and_a_third_answer_is_refused(store_location: str, crowd: People) -> None:
    request = ask(store_location, crowd, "/src/release/v1")
    with serving(store_location, crowd, "alice") as alice, serving(store_location, crowd, "bob") as bob, \
            serving(store_location, crowd, "carol") as carol:  # fmt: skip
        cookies = {served: served.cookie() for served in (alice, bob, carol)}
        pages = {served: served.http("GET", "/", headers={"Cookie": cookies[served]})[2] for served in (alice, bob, carol)}
        assert "0 of 2" in pages[alice] and "a person signs releases" in pages[alice]
        assert answer(alice, cookies[alice], request, "allow-once", csrf_of(pages[alice]))[0] == 303
        assert state(store_location, crowd, request) == "pending"
        again = answer(alice, cookies[alice], request, "allow-once", csrf_of(pages[alice]))
        assert again[0] == 409 and "no longer waits" not in again[1] and "already" in again[1]
        listed = bob.http("GET", "/list", headers={"Cookie": cookies[bob]})[2]
        assert "1 of 2: alice" in listed
        assert answer(bob, cookies[bob], request, "allow-once", csrf_of(pages[bob]))[0] == 303
        assert state(store_location, crowd, request) == "approved"
        status, text = answer(carol, cookies[carol], request, "allow-once", csrf_of(pages[carol]))
        assert status == 409 and "no longer waits" in text
    assert approvers(store_location, request) == ["alice", "bob"]


def test_a_cross_site_post_is_refused(store_location: str, crowd: People) -> None:
    request = ask(store_location, crowd, "/src/release/v1")
    with serving(store_location, crowd, "alice") as served:
        cookie = served.cookie()
        csrf = csrf_of(served.http("GET", "/", headers={"Cookie": cookie})[2])
        assert answer(served, cookie, request, "allow-once", csrf, Origin="https://evil.example")[0] == 403
        assert answer(served, cookie, request, "allow-once", csrf, **{"Sec-Fetch-Site": "cross-site"})[0] == 403
        assert answer(served, cookie, request, "allow-once", "not-the-csrf-token")[0] == 403
        assert answer(served, "", request, "allow-once", csrf)[0] == 403
        assert answer(served, cookie, request, "allow-always", csrf)[0] == 400
        assert state(store_location, crowd, request) == "pending"
        assert approvers(store_location, request) == []


def test_a_person_the_rule_does_not_name_gets_no_buttons_and_cannot_answer(store_location: str, crowd: People) -> None:
    request = ask(store_location, crowd, "/src/release/v1")
    with serving(store_location, crowd, "dave") as served:
        cookie = served.cookie()
        page = served.http("GET", "/", headers={"Cookie": cookie})[2]
        assert "dave is not among the people" in page and 'name="decision"' not in page and request in page


def test_a_forged_row_is_shown_invalid_and_cannot_be_answered(store_location: str, crowd: People) -> None:
    real = ask(store_location, crowd, "/src/release/v1")
    forged = "sha256:" + "0" * 64
    body, = write_directly(store_location, "SELECT body FROM bgc_requests WHERE id = ?", real)
    write_directly(store_location, "INSERT INTO bgc_requests (id, call, body, created, expires) VALUES (?, ?, ?, ?, ?)",
                   forged, "c", body[0], int(time.time()), int(time.time()) + 3600)  # fmt: skip
    with serving(store_location, crowd, "alice") as served:
        cookie = served.cookie()
        page = served.http("GET", "/", headers={"Cookie": cookie})[2]
        assert "Invalid request" in page and forged in page
        assert answer(served, cookie, forged, "allow-once", csrf_of(page))[0] == 409


def test_secrets_in_a_call_are_never_shown() -> None:
    shown = redact("call on api: api_token='ghp_" + "x" * 36 + "', url='https://bob:hunter2@example.com/x', "
                   "password=\"p, w\", body='Authorization: Bearer abc.def.ghi', note='fine'")  # fmt: skip
    assert "ghp_" not in shown and "hunter2" not in shown and "p, w" not in shown and "abc.def" not in shown
    assert shown.count(HIDDEN) == 4 and "note='fine'" in shown


def test_a_call_the_proxy_holds_is_released_once_by_two_peoples_pages(store_location: str, crowd: People) -> None:
    with serving(store_location, crowd, "alice") as alice, serving(store_location, crowd, "bob") as bob:
        cookies = {"alice": alice.cookie(), "bob": bob.cookie()}
        held = HeldCall(store_location, crowd, "/src/release/v1")
        request = None
        for _ in range(600):  # until the proxy has recorded its request
            listed = alice.http("GET", "/list", headers={"Cookie": cookies["alice"]})[2]
            found = re.search(r'data-request="(sha256:[0-9a-f]{64})"', listed)
            if found:
                request = found.group(1)
                break
            time.sleep(0.1)
        assert request is not None
        for served, name in ((alice, "alice"), (bob, "bob")):
            page = served.http("GET", "/", headers={"Cookie": cookies[name]})[2]
            assert answer(served, cookies[name], request, "allow-once", csrf_of(page))[0] == 303
        failed, text = held.outcome()
        assert not failed and text == "wrote 2 characters to /src/release/v1"
        assert held.received() == ["/src/release/v1"]


def test_the_ledger_view_filters_verifies_and_charts(store_location: str, crowd: People) -> None:
    request = ask(store_location, crowd, "/src/release/v1")
    with serving(store_location, crowd, "alice") as served:
        cookie = served.cookie()
        page = served.http("GET", "/", headers={"Cookie": cookie})[2]
        assert answer(served, cookie, request, "allow-once", csrf_of(page))[0] == 303
        assert answer(served, cookie, request, "reject", csrf_of(page))[0] == 409  # answered already
        ledger = served.http("GET", "/ledger", headers={"Cookie": cookie})[2]
        assert "The chain verifies: 1 entries" in ledger and "<svg" in ledger and "p.bgp:7: 1 allow-once" in ledger
        assert "<td>approve</td><td>allow-once</td>" in ledger and "<td>alice</td><td>verified</td>" in ledger
        none = served.http("GET", "/ledger?decision=deny", headers={"Cookie": cookie})[2]
        assert "0 matching entries" in none and "<svg" not in none
        bad = served.http("GET", "/ledger?since=yesterday", headers={"Cookie": cookie})[2]
        assert "is not a time" in bad
        served.http("GET", "/", headers={"Cookie": cookie})
        ask(store_location, crowd, "/src/release/v2")
        later = served.http("GET", "/", headers={"Cookie": cookie})[2]
        assert answer(served, cookie, later.split('data-request="')[1].split('"')[0], "reject", csrf_of(later))[0] == 303
        (row,) = write_directly(store_location, "SELECT entry FROM bgc_ledger WHERE seq = 1")
        edited = bytes(row[0]).replace(b"alice", b"mallo")
        write_directly(store_location, "UPDATE bgc_ledger SET entry = ?, digest = ? WHERE seq = 1", edited,
                       digest_text(edited))  # fmt: skip
        broken = served.http("GET", "/ledger", headers={"Cookie": cookie})[2]
        assert "does not verify at entry 2" in broken
        assert "<td>mallo</td><td>verified</td>" in broken and "<td>alice</td><td>breaks the chain</td>" in broken
        assert served.http("GET", "/ledger")[0] == 403


def test_make_this_a_rule_shows_the_narrowest_rule_and_its_diff(store_location: str, crowd: People) -> None:
    request = ask(store_location, crowd, "/src/release/v1*")
    policy_before = crowd.policy.read_text()
    with serving(store_location, crowd, "alice") as served:
        cookie = served.cookie()
        status, _, shown = served.http("GET", f"/rule?request={request}", headers={"Cookie": cookie})
        assert status == 200
        assert "allow fs:write:/src/release/v1\\*" in shown  # the glob character escaped: this value only
        assert "bgc diff" in shown and "/src/release/v1" in shown
        assert served.http("GET", "/rule?request=sha256:" + "0" * 64, headers={"Cookie": cookie})[0] == 404
    assert crowd.policy.read_text() == policy_before  # nothing edited


def test_it_listens_on_ipv6_loopback_and_refuses_every_address(tmp_path: Path, crowd: People) -> None:
    store = str(tmp_path / "k.db")
    ask(store, crowd, "/src/release/v1")
    with serving(store, crowd, "alice", "--host", "::1") as served:
        assert served.url.startswith("http://[::1]:")
        assert served.http("GET", "/", headers={"Cookie": served.cookie()})[0] == 200
    result = bgc("approvals", "serve", "--key", str(crowd.key("alice")), "--store", store, "-p", str(crowd.policy),
                 "--host", "0.0.0.0")  # fmt: skip
    assert result.exit_code == 2 and "every address" in result.output
