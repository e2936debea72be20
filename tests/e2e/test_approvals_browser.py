"""The approvals page in a real browser (Debian's chromium, driven by Playwright), over a call
the real `bgc mcp-proxy` holds for the real MCP SDK's client.

Playwright rather than Selenium: one Python package drives the system's chromium through its
DevTools protocol (no matching chromedriver to install), gives each person an isolated browser
context with its own cookies, and waits for what the page shows without sleeps. Its own browser
builds are never downloaded: it launches /usr/bin/chromium (.ci/run installs it).

Accessibility is checked by axe-core (``BGC_AXE_CORE`` names its ``axe.min.js``; .ci/run
installs it from npm, pinned), evaluated in the page through the DevTools protocol, which the
page's content security policy does not govern. Screenshots at desktop and phone sizes go to
``BGC_SCREENSHOTS`` when it names a directory, else to the test's temporary directory.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.approvals_support import HeldCall, People, Served, people, serving
from tests.samples import missing_in_ci
from tests.store_support import write_directly

CHROMIUM = "/usr/bin/chromium"
DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}
SHOWN = 30_000
"""Milliseconds the browser may take to show what the store holds (a bound, never a measure)."""

playwright_api = pytest.importorskip("playwright.sync_api")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not os.path.exists(CHROMIUM):
        missing_in_ci(f"{CHROMIUM} is missing (apt-get install chromium)")
    with playwright_api.sync_playwright() as driver:
        launched = driver.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def crowd(tmp_path: Path) -> People:
    return people(tmp_path)


@pytest.fixture
def shots(tmp_path: Path) -> Path:
    kept = os.environ.get("BGC_SCREENSHOTS")
    where = Path(kept) if kept else tmp_path / "screenshots"
    where.mkdir(parents=True, exist_ok=True)
    return where


def axe_violations(page: Any) -> list[dict]:
    """What axe-core finds wrong (labels, contrast, keyboard and the rest of its WCAG A/AA rules)."""
    source = os.environ.get("BGC_AXE_CORE")
    if not source or not os.path.isfile(source):
        missing_in_ci("BGC_AXE_CORE names no axe.min.js (.ci/run installs axe-core from npm)")
    page.evaluate(Path(source).read_text())
    return page.evaluate(
        """async () => (await axe.run(document, {runOnly: ["wcag2a", "wcag2aa", "best-practice"]})).violations
            .map(v => ({id: v.id, nodes: v.nodes.map(n => n.target.join(" "))}))"""
    )


def open_page(browser: Any, served: Served, **options: Any) -> tuple[Any, Any]:
    context = browser.new_context(**options)
    page = context.new_page()
    page.goto(served.url)
    assert page.url == served.origin + "/"  # the token left the address bar
    return context, page


def held_on(page: Any, store: str, crowd: People, path: str) -> tuple[HeldCall, Any]:
    """A call to write ``path`` held by the proxy, once its card is on ``page`` (without reload)."""
    held = HeldCall(store, crowd, path)
    shown = card(page, path)
    playwright_api.expect(shown).to_be_visible(timeout=SHOWN)
    return held, shown


def cancel(request: str, store: str) -> None:
    """`bgc cancel`, as a person runs it."""
    done = subprocess.run([sys.executable, "-m", "bgc", "cancel", request, "--store", store],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr


def card(page: Any, path: str) -> Any:
    return page.locator("article.card", has_text=path)


def test_two_people_release_a_held_call_once_from_their_own_browsers(
    browser: Any, tmp_path: Path, crowd: People, shots: Path
) -> None:
    store = str(tmp_path / "k.db")
    with serving(store, crowd, "alice") as alice, serving(store, crowd, "bob") as bob, \
            serving(store, crowd, "carol") as carol:  # fmt: skip
        a_context, a_page = open_page(browser, alice, viewport=DESKTOP)
        playwright_api.expect(a_page.locator("main")).to_contain_text("Nothing waits")
        held = HeldCall(store, crowd, "/src/release/v1")
        shown = card(a_page, "/src/release/v1")
        playwright_api.expect(shown).to_be_visible(timeout=SHOWN)  # no reload: the event stream brought it
        playwright_api.expect(shown).to_contain_text("a person signs releases")
        playwright_api.expect(shown).to_contain_text("0 of 2")
        playwright_api.expect(shown).to_contain_text("alice, bob, carol")
        a_page.screenshot(path=str(shots / "approvals-desktop.png"), full_page=True)
        assert axe_violations(a_page) == []

        shown.get_by_role("button", name="Approve once").focus()  # by keyboard, as a person may
        a_page.keyboard.press("Enter")
        playwright_api.expect(card(a_page, "/src/release/v1")).to_contain_text("You answered: allow-once")

        # carol's page without script: it stays as it was loaded, so her form outlives the request
        c_context, c_page = open_page(browser, carol, viewport=DESKTOP, java_script_enabled=False)
        playwright_api.expect(card(c_page, "/src/release/v1")).to_contain_text("1 of 2: alice")

        b_context, b_page = open_page(browser, bob, viewport=PHONE, is_mobile=True, has_touch=True)
        on_phone = card(b_page, "/src/release/v1")
        playwright_api.expect(on_phone).to_contain_text("1 of 2: alice")
        playwright_api.expect(on_phone).to_contain_text("bob, carol")
        assert b_page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")  # nothing off-screen
        b_page.screenshot(path=str(shots / "approvals-phone.png"), full_page=True)
        assert axe_violations(b_page) == []
        on_phone.get_by_role("button", name="Approve once").tap()

        failed, text = held.outcome()
        assert not failed and text == "wrote 2 characters to /src/release/v1"
        assert held.received() == ["/src/release/v1"]
        playwright_api.expect(card(a_page, "/src/release/v1")).to_have_count(0, timeout=SHOWN)  # gone, live
        playwright_api.expect(a_page.locator("main")).to_contain_text("Nothing waits")

        c_page.get_by_role("button", name="Approve once").click()
        playwright_api.expect(c_page.locator("body")).to_contain_text("no longer waits")
        answers = write_directly(store, "SELECT approver FROM bgc_answers ORDER BY approver")
        assert [row[0] for row in answers] == ["alice", "bob"]
        assert held.received() == ["/src/release/v1"]  # released exactly once

        a_page.get_by_role("link", name="Ledger").click()
        playwright_api.expect(a_page.locator("main")).to_contain_text("The chain verifies")
        playwright_api.expect(a_page.locator("svg.chart")).to_be_visible()
        a_page.screenshot(path=str(shots / "ledger-desktop.png"), full_page=True)
        assert axe_violations(a_page) == []
        a_page.get_by_role("textbox", name="Decision").fill("allow")
        a_page.get_by_role("textbox", name="Decision").press("Enter")
        playwright_api.expect(a_page.locator("tbody tr")).to_have_count(1)
        playwright_api.expect(a_page.locator("tbody")).to_contain_text("alice, bob")
        b_page.goto(bob.origin + "/ledger")
        b_page.screenshot(path=str(shots / "ledger-phone.png"), full_page=True)
        assert axe_violations(b_page) == []
        for context in (a_context, b_context, c_context):
            context.close()


def test_a_rejection_ends_a_call_and_a_cancelled_one_disappears(browser: Any, tmp_path: Path, crowd: People) -> None:
    store = str(tmp_path / "k.db")
    with serving(store, crowd, "alice") as alice:
        context, page = open_page(browser, alice, viewport=DESKTOP)
        rejected, shown = held_on(page, store, crowd, "/src/release/v2")
        shown.get_by_role("button", name="Reject").click()
        failed, text = rejected.outcome()
        assert failed and "rejected by alice" in text
        playwright_api.expect(card(page, "/src/release/v2")).to_have_count(0, timeout=SHOWN)

        cancelled, shown = held_on(page, store, crowd, "/src/release/v3")
        request = shown.get_attribute("data-request")
        cancel(request, store)
        playwright_api.expect(page.locator(f'article[data-request="{request}"]')).to_have_count(0, timeout=SHOWN)
        failed, text = cancelled.outcome()
        assert failed and f"permission request {request} was cancelled" in text
        playwright_api.expect(page.locator("main")).to_contain_text("Nothing waits")
        assert rejected.received() == []
        context.close()


def test_forged_rows_are_shown_invalid_and_release_nothing(browser: Any, tmp_path: Path, crowd: People) -> None:
    store = str(tmp_path / "k.db")
    with serving(store, crowd, "alice") as alice:
        context, page = open_page(browser, alice, viewport=DESKTOP)
        held, shown = held_on(page, store, crowd, "/src/release/v4")
        request = shown.get_attribute("data-request")
        # whoever can write the store adds answers nobody signed, and a request of their own
        for name in ("alice", "bob"):
            write_directly(store, "INSERT INTO bgc_answers (request, approver, decision, body) VALUES (?, ?, ?, ?)",
                           request, name, "allow-once", b"not a signed answer")  # fmt: skip
        forged = "sha256:" + "f" * 64
        write_directly(store, "INSERT INTO bgc_requests (id, call, body, created, expires) "
                       "SELECT ?, call, body, created, expires FROM bgc_requests WHERE id = ?", forged, request)  # fmt: skip
        invalid = page.locator("article.card.invalid", has_text=forged)
        playwright_api.expect(invalid).to_be_visible(timeout=SHOWN)
        playwright_api.expect(invalid.get_by_role("button")).to_have_count(0)
        playwright_api.expect(card(page, "/src/release/v4")).to_contain_text("0 of 2")
        cancel(request, store)
        failed, text = held.outcome()
        assert failed and f"permission request {request} was cancelled" in text
        assert held.received() == []
        context.close()


class CrossSite(BaseHTTPRequestHandler):
    """Another site on this machine: a page whose form posts an approval to the approvals page."""

    target = ""
    request_id = ""

    def do_GET(self) -> None:
        form = (f'<!doctype html><html lang="en"><title>elsewhere</title><form method="post" action="{self.target}">'
                f'<input type="hidden" name="request" value="{self.request_id}">'
                '<input type="hidden" name="csrf" value="guessed">'
                '<button name="decision" value="allow-once">Win a prize</button></form></html>').encode()  # fmt: skip
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(form)))
        self.end_headers()
        self.wfile.write(form)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass


def test_the_page_without_its_token_and_a_cross_site_post_are_refused(browser: Any, tmp_path: Path, crowd: People) -> None:
    from tests.e2e.approvals_support import ask

    store = str(tmp_path / "k.db")
    request = ask(store, crowd, "/src/release/v5")
    with serving(store, crowd, "alice") as alice:
        stranger = browser.new_context()
        response = stranger.new_page().goto(alice.origin + "/")
        assert response is not None and response.status == 403
        stranger.close()

        context, page = open_page(browser, alice, viewport=DESKTOP)  # alice is signed in: her cookie is set
        playwright_api.expect(card(page, "/src/release/v5")).to_be_visible()
        CrossSite.target, CrossSite.request_id = alice.origin + "/answer", request
        elsewhere = ThreadingHTTPServer(("127.0.0.1", 0), CrossSite)
        threading.Thread(target=elsewhere.serve_forever, daemon=True).start()
        try:
            lure = context.new_page()
            lure.goto(f"http://127.0.0.1:{elsewhere.server_address[1]}/")
            with lure.expect_navigation() as posted:
                lure.get_by_role("button", name="Win a prize").click()
            assert posted.value is not None and posted.value.status == 403
        finally:
            elsewhere.shutdown()
        assert write_directly(store, "SELECT approver FROM bgc_answers") == []
        playwright_api.expect(card(page, "/src/release/v5")).to_contain_text("0 of 2")
        page.bring_to_front()
        card(page, "/src/release/v5").get_by_role("link", name="Make this a rule…").click()
        playwright_api.expect(page.locator("pre.rule")).to_contain_text("allow fs:write:/src/release/v5")
        playwright_api.expect(page.locator("main")).to_contain_text("bgc diff")
        assert axe_violations(page) == []
        context.close()

