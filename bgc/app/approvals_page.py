"""The approvals page that ``bgc approvals serve`` serves: what waits, answered with a click.

One person starts it with their own key (``--key``). The page is a view of the store; the
answer is signed **in this process**, by :func:`bgc.app.commands.approvals.sign_and_record`, the
code ``bgc approve`` runs: the private key never reaches the browser, the page or the agent, and
the browser never holds anything a signature could be made from.

Who may use it, and how (each refusal is an error status, with nothing done):

- Only a request that names this server as its ``Host`` (the loopback name and port it listens
  on, or the host it was told to bind): a page elsewhere cannot reach it through a name of its
  own that resolves to loopback (DNS rebinding).
- The access token: printed at start (``/?token=…``, like Jupyter's); its first use sets an
  ``HttpOnly``, ``SameSite=Strict`` cookie (named with the port, so two people's servers on one
  machine do not share it) and redirects to the bare URL, so the token leaves the address bar.
  No token, no page, no list, no events.
- Every POST also carries the per-start CSRF token the page's forms hold, and is refused when
  the browser says it comes from another site (``Origin``, ``Sec-Fetch-Site``). A strict cookie
  is not even sent with a cross-site form post.
- A content security policy that allows only this server's own script and style, no inline
  code, no frames, forms posting only here; nothing from a third party is ever loaded.
- An answer is refused unless the request is live and still waiting (not approved, rejected,
  used, cancelled or expired), this person may answer it, and has not answered it already.

Live updates: the page listens to ``/events`` (server-sent events) and fetches the list again
when the store changes. The store is read when :mod:`bgc.app.store_watch` says it may have
changed (a file change of a SQLite store, a notification from PostgreSQL), and otherwise once
every ``POLL_SECONDS``. The ledger view and "make this a rule" only read
(:mod:`bgc.app.approvals_ledger`).
"""

from __future__ import annotations

import hmac
import html
import re
import secrets
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from bgc.errors import BgcError
from bgc.runtime.store.base import StoreError

KEEPALIVE_SECONDS = 15.0
"""How often an idle event stream sends a comment, so proxies and browsers keep it open."""
MAX_FORM_BYTES = 4096
"""An answer's form is a request id, a decision and a token: anything larger is refused unread."""
FOLD_CHARS = 160
"""A call's text longer than this is folded: its start shown, the rest one click away."""
REQUEST_ID = re.compile(r"sha256:[0-9a-f]{64}")


# ---- what the page shows ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Progress:
    """One requirement of a request: how many of whom, who counted, who may still answer."""

    needed: int
    counted: tuple[str, ...]
    still: tuple[str, ...]

    def text(self) -> str:
        return f"{len(self.counted)} of {self.needed}" + (f": {', '.join(self.counted)}" if self.counted else "")


@dataclass(frozen=True, slots=True)
class Waiting:
    """A request as the page shows it (``request`` None: a row that is no request, shown invalid)."""

    id: str
    request: Any
    because: str | None
    progress: tuple[Progress, ...]
    ignored: tuple[tuple[str, str], ...]
    mine: str | None
    """This person's own answer already kept, if any."""


def board(store: Any, trusted: Mapping[str, Any], reasons: Mapping[str, str], me: str, now: int) -> list[Waiting]:
    """The live requests, newest first: those still waiting, and rows that are no valid request
    (edited or forged in the store: shown as invalid, never answerable)."""
    from bgc.runtime.approvals import decode_answer, load_request, stored_standing, was_used

    shown: list[tuple[int, Waiting]] = []
    for request_id, _, _ in store.requests(now):
        loaded = load_request(store, request_id)
        if loaded is None:
            shown.append((now, Waiting(request_id, None, None, (), (), None)))
            continue
        request, cancelled = loaded
        result = stored_standing(store, request, cancelled, trusted, now)
        if result.state != "pending" or was_used(store, request):
            continue
        mine = next((answer.decision for answer in map(decode_answer, store.answers(request_id))
                     if answer is not None and answer.approver == me), None)  # fmt: skip
        progress = tuple(
            Progress(
                requirement.count,
                counted := tuple(name for name in result.counted if requirement.admits(name)),
                tuple(name for name in (requirement.approvers or sorted(trusted)) if name not in counted),
            )
            for requirement in request.requirements
        )
        because = "; ".join(filter(None, (reasons.get(rule.strip()) for rule in request.rule.split(",")))) or None
        shown.append((request.created, Waiting(request_id, request, because, progress, result.ignored, mine)))
    shown.sort(key=lambda item: (-item[0], item[1].id))
    return [waiting for _, waiting in shown]


def rule_reasons(policy: Any) -> dict[str, str]:
    """Each rule's place as requests cite it (``file:line``) → its ``because``."""
    from bgc.core.compiler import rule_ref

    return {str(rule_ref(policy, rule)): rule.because for rule in policy.rules if rule.because}


# ---- secrets never shown ------------------------------------------------------------------------------

_QUOTED = r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|[^,\s]*"


def _credential_parameter() -> re.Pattern[str]:
    from bgc.runtime.sandbox.mapping import CREDENTIAL_MARKS

    marks = "|".join(re.escape(mark.strip("_")) for mark in CREDENTIAL_MARKS)
    return re.compile(rf"(\b[\w.-]*(?:{marks})[\w.-]*=)({_QUOTED})", re.IGNORECASE)


CREDENTIAL_PARAMETER = _credential_parameter()
"""A parameter whose name says it holds a credential (the sandbox's marks: ``*TOKEN*``,
``*SECRET*``, ``*PASSWORD*``, ``*_KEY``…), with its value as the call's summary writes it."""
SECRET_VALUE = re.compile(
    r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)"
    r"|\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_\w{20,}|glpat-[\w-]{20,}|xox[abposr]-[\w-]{10,}"
    r"|sk-[\w-]{20,}|AKIA[0-9A-Z]{16}|AIza[\w-]{35}|npm_[A-Za-z0-9]{36}|pypi-[\w-]{20,})"
    r"|\b(?:Bearer|Basic)\s+[\w.~+/=-]{8,}"
    r"|(?<=://)[^/\s:@]+:[^/\s@]+(?=@)",
    re.DOTALL,
)
"""Values that are credentials whatever their parameter is called: private keys, the token
formats of the common providers, HTTP authorisation, a URL's user:password."""
HIDDEN = "•••"


def redact(text: str) -> str:
    """``text`` with every credential replaced by :data:`HIDDEN`: people approve the call's
    shape, and a page (or a screenshot of it) never carries a secret the agent handled."""
    text = CREDENTIAL_PARAMETER.sub(lambda match: match.group(1) + HIDDEN, text)
    return SECRET_VALUE.sub(HIDDEN, text)


# ---- HTML ------------------------------------------------------------------------------------------------


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _when(epoch: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(epoch))


def _folded(text: str) -> str:
    if len(text) <= FOLD_CHARS:
        return f"<code>{_e(text)}</code>"
    return (f"<details><summary><code>{_e(text[:FOLD_CHARS])}…</code> ({len(text):,} characters)</summary>"
            f"<code>{_e(text)}</code></details>")  # fmt: skip


def render_card(item: Waiting, me: str, csrf: str, now: int) -> str:
    """One request as an ``<article>``: what it is, where it stands, and this person's buttons."""
    if item.request is None:
        return (f'<article class="card invalid" aria-label="invalid request"><h2>Invalid request</h2>'
                f"<p><code>{_e(item.id)}</code></p><p>Its stored body does not match its id: it was edited or "
                "forged in the store. Nobody can answer it and it releases nothing.</p></article>")  # fmt: skip
    request = item.request
    rows = [
        ("Rule", f"<code>{_e(request.rule)}</code>" + (f" — {_e(item.because)}" if item.because else "")),
        ("Call", f"<code>{_e(request.tool)}</code> on <code>{_e(request.server)}</code>"),
        ("Parameters", _folded(redact(request.summary))),
        ("Needs", "<br>".join(_e(atom) for atom in request.atoms)),
        ("Progress", "<br>".join(_e(p.text()) for p in item.progress)),
        ("May still answer", "<br>".join(_e(", ".join(p.still) or "nobody else") for p in item.progress)),
        ("Expires", f"{_e(_when(request.expires))} (in {max(0, request.expires - now) // 60} min)"),
        ("Session", f"<code>{_e(request.session or '—')}</code>"),
        ("Asked", _e(_when(request.created))),
    ]
    if item.ignored:
        rows.append(("Not counted", "<br>".join(f"{_e(who)}: {_e(why)}" for who, why in item.ignored)))
    table = "".join(f"<dt>{name}</dt><dd>{value}</dd>" for name, value in rows)
    label = f"{request.tool} on {request.server}"
    if item.mine is not None:
        actions = f'<p class="answered">You answered: {_e(item.mine)}.</p>'
    elif not request.admits(me):
        actions = f'<p class="answered">{_e(me)} is not among the people this request needs.</p>'
    else:
        hidden = (f'<input type="hidden" name="csrf" value="{_e(csrf)}">'
                  f'<input type="hidden" name="request" value="{_e(item.id)}">')  # fmt: skip
        actions = (f'<form method="post" action="/answer" class="actions">{hidden}'
                   f'<button type="submit" name="decision" value="allow-once" class="approve" '
                   f'aria-label="Approve once: {_e(label)}">Approve once</button>'
                   f'<button type="submit" name="decision" value="reject" class="reject" '
                   f'aria-label="Reject: {_e(label)}">Reject</button></form>')  # fmt: skip
    rule = f'<p><a href="/rule?request={_e(item.id)}">Make this a rule…</a> (a policy edit, reviewed with bgc diff)</p>'
    return (f'<article class="card" id="r-{_e(item.id[7:23])}" data-request="{_e(item.id)}" aria-label="{_e(label)}">'
            f"<h2>{_e(label)}</h2><p class=\"rid\"><code>{_e(item.id)}</code></p><dl>{table}</dl>{actions}{rule}</article>")  # fmt: skip


def render_list(items: list[Waiting], me: str, csrf: str, now: int) -> str:
    if not items:
        return '<p class="empty">Nothing waits for an answer.</p>'
    return "".join(render_card(item, me, csrf, now) for item in items)


def render_page(body: str, me: str, notice: str | None, heading: str = "Waiting for approval", live: bool = True) -> str:
    shown = f'<p class="notice" role="status">{_e(notice)}</p>' if notice else ""
    status = ' <span id="live" role="status">updates live</span>' if live else ""
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<title>bgc: {_e(heading)}</title><link rel="stylesheet" href="/app.css"></head><body>'
        '<header><nav aria-label="Views"><a href="/">Waiting</a> <a href="/ledger">Ledger</a></nav>'
        f'<h1>{_e(heading)}</h1><p>Signing as <strong>{_e(me)}</strong>.{status}</p></header>'
        f'{shown}<main id="requests" aria-live="polite">{body}</main>'
        + ('<script src="/app.js"></script>' if live else "") + "</body></html>"
    )


CSS = """\
:root { color-scheme: light; font-family: system-ui, sans-serif; line-height: 1.4; }
body { margin: 0 auto; max-width: 52rem; padding: 0.75rem; color: #1a1a1a; background: #fafafa; }
h1 { font-size: 1.4rem; margin: 0.25rem 0; } h2 { font-size: 1.1rem; margin: 0 0 0.25rem; overflow-wrap: anywhere; }
.card { background: #fff; border: 1px solid #767676; border-radius: 0.5rem; padding: 0.75rem; margin: 0.75rem 0; }
.card.invalid { border: 2px solid #a4001d; background: #fff0f0; }
dl { display: grid; grid-template-columns: minmax(6rem, max-content) 1fr; gap: 0.25rem 0.75rem; margin: 0.5rem 0; }
dt { font-weight: 600; } dd { margin: 0; overflow-wrap: anywhere; min-width: 0; }
code { font-family: ui-monospace, monospace; font-size: 0.9em; white-space: pre-wrap; overflow-wrap: anywhere; }
.rid { margin: 0; color: #4a4a4a; font-size: 0.8rem; overflow-wrap: anywhere; }
.actions { display: flex; gap: 0.75rem; flex-wrap: wrap; }
button { font: inherit; font-weight: 600; min-height: 2.75rem; min-width: 8rem; padding: 0.5rem 1rem;
         border-radius: 0.4rem; border: 2px solid transparent; cursor: pointer; color: #fff; }
.approve { background: #0b6b2e; } .reject { background: #a4001d; }
button:focus-visible, summary:focus-visible { outline: 3px solid #1a4fd6; outline-offset: 2px; }
.notice { background: #e8f0fe; border: 1px solid #1a4fd6; padding: 0.5rem; border-radius: 0.4rem; }
.answered, .empty, #live { color: #4a4a4a; }
nav a { margin-right: 1rem; color: #1a4fd6; } a { color: #1a4fd6; }
.filters { display: flex; flex-wrap: wrap; gap: 0.5rem 1rem; align-items: end; }
.filters label { display: flex; flex-direction: column; font-weight: 600; }
input { font: inherit; padding: 0.3rem; border: 1px solid #767676; border-radius: 0.3rem; }
button.plain { color: #fff; background: #1a4fd6; min-width: 6rem; }
.scroll { overflow-x: auto; } table { border-collapse: collapse; font-size: 0.9rem; }
th, td { border-bottom: 1px solid #c8c8c8; padding: 0.3rem 0.5rem; text-align: left; vertical-align: top; }
.chain.ok { color: #0b6b2e; } .chain.broken { color: #a4001d; font-weight: 600; }
.chart { width: 100%; min-width: 34rem; max-width: 48rem; height: auto; } .chart-box { margin: 0.5rem 0; } pre { white-space: pre-wrap; overflow-wrap: anywhere; }
pre.rule { background: #fff; border: 1px solid #767676; padding: 0.5rem; }
@media (max-width: 30rem) { dl { grid-template-columns: 1fr; } dd { margin-bottom: 0.4rem; } button { flex: 1; } }
"""

SCRIPT = """\
"use strict";
(function () {
  const list = document.getElementById("requests");
  const live = document.getElementById("live");
  let pending = null;
  async function refresh() {
    const response = await fetch("/list", { credentials: "same-origin", cache: "no-store" });
    if (response.ok) { list.innerHTML = await response.text(); live.textContent = "updates live"; }
    else { live.textContent = "not updating (" + response.status + ")"; }
  }
  const events = new EventSource("/events");
  events.addEventListener("change", function () {
    pending = pending || refresh().finally(function () { pending = null; });
  });
  events.onerror = function () { live.textContent = "reconnecting…"; };
  events.onopen = function () { live.textContent = "updates live"; };
})();
"""

CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; "
       "form-action 'self'; frame-ancestors 'none'; base-uri 'none'")  # fmt: skip


# ---- the server ---------------------------------------------------------------------------------------------


class Refused(Exception):
    """A request the server will not serve: its status and why."""

    def __init__(self, status: HTTPStatus, why: str) -> None:
        super().__init__(why)
        self.status = status


@dataclass
class Page:
    """One person's approvals page over one store."""

    store: Any
    trusted: Mapping[str, Any]
    reasons: Mapping[str, str]
    me: str
    sign: Callable[[str, str], str]
    """``(request id, decision) → what happened``: signs and keeps the answer (raises BgcError)."""
    watch: Any
    """A :class:`bgc.app.store_watch.Watch` on the store."""
    access: str = ""
    csrf: str = ""
    hosts: tuple[str, ...] = ()
    port: int = 0
    policy_path: str = ""
    """The policy file, which "make this a rule" compares with itself plus the proposed rule."""
    notify: Callable[[Waiting], None] | None = None
    """Called once for each request that starts waiting while the page runs."""

    def __post_init__(self) -> None:
        self.access = self.access or secrets.token_urlsafe(32)
        self.csrf = self.csrf or secrets.token_urlsafe(32)
        self.lock = threading.RLock()  # one store connection, used by one thread at a time
        self.changed = threading.Condition()
        self.version = 0
        self.fingerprint: object = None
        self.notice: str | None = None
        self.stopping = threading.Event()
        self.known: set[str] | None = None  # None: the first look, whose requests are on the page already

    @property
    def cookie(self) -> str:
        return f"bgc-approvals-{self.port}"

    def items(self) -> list[Waiting]:
        with self.lock:
            return board(self.store, self.trusted, self.reasons, self.me, int(time.time()))

    def look(self) -> None:
        """Read the store; a different board wakes every event stream."""
        try:
            items = self.items()
            fingerprint: object = [(item.id, item.progress, item.mine, item.ignored) for item in items]
            self._announce(items)
        except Exception as error:  # noqa: BLE001 - a store that cannot be read shows as a change, then an error
            fingerprint = ("error", str(error))
        if fingerprint != self.fingerprint:
            with self.changed:
                self.fingerprint = fingerprint
                self.version += 1
                self.changed.notify_all()

    def _announce(self, items: list[Waiting]) -> None:
        waiting = {item.id: item for item in items if item.request is not None}
        if self.known is not None and self.notify is not None:
            for request_id in sorted(waiting.keys() - self.known):
                self.notify(waiting[request_id])
        self.known = (self.known or set()) | waiting.keys()

    def follow(self) -> None:
        """The watcher thread: look, then wait for a sign of change or ``POLL_SECONDS``."""
        from bgc.app.store_watch import POLL_SECONDS

        while not self.stopping.is_set():
            self.look()
            self.watch.wait(POLL_SECONDS)

    def answer(self, request_id: str, decision: str) -> str:
        """Sign and keep this person's answer, refused unless the request still waits for it."""
        if decision not in ("allow-once", "reject") or not REQUEST_ID.fullmatch(request_id):
            raise Refused(HTTPStatus.BAD_REQUEST, "an answer names one request and is allow-once or reject")
        with self.lock:  # checked and signed as one step: two clicks at once give one answer
            waiting = {item.id: item for item in self.items()}.get(request_id)
            if waiting is None or waiting.request is None:
                raise Refused(HTTPStatus.CONFLICT, f"permission request {request_id} no longer waits for an answer")
            if waiting.mine is not None:
                raise Refused(HTTPStatus.CONFLICT, f"you answered permission request {request_id} already")
            if not waiting.request.admits(self.me):
                raise Refused(HTTPStatus.FORBIDDEN, f"{self.me} is not among the people request {request_id} needs")
            said = self.sign(request_id, decision)
        self.look()
        return said


def handler(page: Page) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "bgc"
        sys_version = ""
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
            pass  # the token is in the first request's line: never written to a log

        # ---- checks ----

        def _host(self) -> None:
            if self.headers.get("Host", "") not in page.hosts:
                raise Refused(HTTPStatus.FORBIDDEN, "this server answers only to its own address")

        def _authorised(self) -> bool:
            from http.cookies import CookieError, SimpleCookie

            jar: SimpleCookie = SimpleCookie()
            try:
                jar.load(self.headers.get("Cookie", ""))
            except CookieError:
                return False
            held = jar.get(page.cookie)
            return held is not None and hmac.compare_digest(held.value.encode(), page.access.encode())

        def _same_origin(self) -> None:
            origin = self.headers.get("Origin")
            if origin is not None and urlsplit(origin).netloc not in page.hosts:
                raise Refused(HTTPStatus.FORBIDDEN, "a form from another site cannot answer")
            if self.headers.get("Sec-Fetch-Site", "same-origin") not in ("same-origin", "none"):
                raise Refused(HTTPStatus.FORBIDDEN, "a form from another site cannot answer")

        # ---- replies ----

        def _headers(self, status: HTTPStatus, kind: str, length: int | None, extra: dict[str, str]) -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Security-Policy", CSP)
            self.send_header("X-Content-Type-Options", "nosniff")
            # not no-referrer: under it, Chromium sends a same-origin form's Origin as "null"
            self.send_header("Referrer-Policy", "same-origin")
            self.send_header("Cache-Control", "no-store")
            self.send_header("Cross-Origin-Opener-Policy", "same-origin")
            self.send_header("Cross-Origin-Resource-Policy", "same-origin")
            for name, value in extra.items():
                self.send_header(name, value)
            if length is not None:
                self.send_header("Content-Length", str(length))
            self.end_headers()

        def _send(self, status: HTTPStatus, kind: str, text: str, extra: dict[str, str] | None = None) -> None:
            data = text.encode()
            self._headers(status, kind, len(data), extra or {})
            if self.command != "HEAD":
                self.wfile.write(data)

        def _refuse(self, refused: Refused) -> None:
            self.close_connection = True
            self._send(refused.status, "text/plain; charset=utf-8", f"{refused.status.value} {refused}\n")

        # ---- routes ----

        def do_GET(self) -> None:
            try:
                self._host()
                url = urlsplit(self.path)
                if url.path in ("/app.css", "/app.js"):
                    kind = "text/css" if url.path == "/app.css" else "text/javascript"
                    self._send(HTTPStatus.OK, f"{kind}; charset=utf-8", CSS if kind == "text/css" else SCRIPT)
                    return
                token = parse_qs(url.query).get("token", [""])[0]
                if url.path == "/" and token:
                    if not hmac.compare_digest(token.encode(), page.access.encode()):
                        raise Refused(HTTPStatus.FORBIDDEN, "this is not the token the server printed")
                    cookie = f"{page.cookie}={page.access}; Path=/; HttpOnly; SameSite=Strict"
                    self._send(HTTPStatus.SEE_OTHER, "text/plain", "", {"Location": "/", "Set-Cookie": cookie})
                    return
                if not self._authorised():
                    raise Refused(HTTPStatus.FORBIDDEN, "open the URL bgc approvals serve printed (it carries the token)")
                if url.path == "/":
                    notice, page.notice = page.notice, None
                    body = render_list(page.items(), page.me, page.csrf, int(time.time()))
                    self._send(HTTPStatus.OK, "text/html; charset=utf-8", render_page(body, page.me, notice))
                elif url.path == "/list":
                    body = render_list(page.items(), page.me, page.csrf, int(time.time()))
                    self._send(HTTPStatus.OK, "text/html; charset=utf-8", body)
                elif url.path == "/events":
                    self._events()
                elif url.path == "/ledger":
                    from bgc.app.approvals_ledger import ledger_view

                    filters = {name: values[0] for name, values in parse_qs(url.query, max_num_fields=16).items()}
                    with page.lock:
                        rows = list(page.store.rows())
                    text = render_page(ledger_view(rows, filters), page.me, None, "Ledger", live=False)
                    self._send(HTTPStatus.OK, "text/html; charset=utf-8", text)
                elif url.path == "/rule":
                    self._rule(parse_qs(url.query).get("request", [""])[0])
                else:
                    raise Refused(HTTPStatus.NOT_FOUND, "no such page")
            except Refused as refused:
                self._refuse(refused)
            except StoreError as error:
                self._refuse(Refused(HTTPStatus.SERVICE_UNAVAILABLE, f"the store cannot be read: {error}"))

        def do_POST(self) -> None:
            try:
                self._host()
                if not self._authorised():
                    raise Refused(HTTPStatus.FORBIDDEN, "open the URL bgc approvals serve printed (it carries the token)")
                self._same_origin()
                if urlsplit(self.path).path != "/answer":
                    raise Refused(HTTPStatus.NOT_FOUND, "no such form")
                try:
                    length = int(self.headers.get("Content-Length", ""))
                except ValueError:
                    raise Refused(HTTPStatus.LENGTH_REQUIRED, "a form says its length") from None
                if not 0 <= length <= MAX_FORM_BYTES:
                    raise Refused(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, "an answer's form is small")
                try:
                    form = parse_qs(self.rfile.read(length).decode("utf-8", "replace"), max_num_fields=8)
                except ValueError:
                    raise Refused(HTTPStatus.BAD_REQUEST, "an answer's form has three fields") from None
                csrf = form.get("csrf", [""])[0]
                if not hmac.compare_digest(csrf.encode(), page.csrf.encode()):
                    raise Refused(HTTPStatus.FORBIDDEN, "the form's token is not this page's")
                try:
                    page.notice = page.answer(form.get("request", [""])[0], form.get("decision", [""])[0])
                except BgcError as error:
                    raise Refused(HTTPStatus.CONFLICT, error.message) from None
                self._send(HTTPStatus.SEE_OTHER, "text/plain", "", {"Location": "/"})
            except Refused as refused:
                self._refuse(refused)
            except StoreError as error:  # nothing was kept, or it was and the ledger could not say so
                self._refuse(Refused(HTTPStatus.SERVICE_UNAVAILABLE, f"the store could not record the answer: {error}"))

        def _rule(self, request_id: str) -> None:
            from bgc.app.approvals_ledger import proposed_rule

            waiting = {item.id: item for item in page.items()}.get(request_id)
            if waiting is None or waiting.request is None:
                raise Refused(HTTPStatus.NOT_FOUND, f"no waiting request {request_id}")
            body = proposed_rule(waiting.request, page.me, page.policy_path)
            self._send(HTTPStatus.OK, "text/html; charset=utf-8", render_page(body, page.me, None, "A rule", live=False))

        def _events(self) -> None:
            self.close_connection = True
            self._headers(HTTPStatus.OK, "text/event-stream", None, {"Connection": "close"})
            seen = -1
            try:
                while not page.stopping.is_set():
                    with page.changed:
                        if page.version == seen:
                            page.changed.wait(KEEPALIVE_SECONDS)
                        version = page.version
                    if version != seen:
                        self.wfile.write(f"event: change\ndata: {version}\n\n".encode())
                        seen = version
                    else:
                        self.wfile.write(b": still here\n\n")
                    self.wfile.flush()
            except OSError:
                return  # the page was closed

    return Handler


def serve(page: Page, host: str, port: int, ready: Callable[[str], None]) -> None:
    """Listen on ``host:port`` (0: any free port) until interrupted; ``ready`` receives the URL
    with the access token once the server listens."""
    import socket

    class Server(ThreadingHTTPServer):
        address_family = socket.AF_INET6 if ":" in host else socket.AF_INET

    server = Server((host, port), handler(page))
    server.daemon_threads = True
    page.port = server.server_address[1]
    named = f"[{host}]" if ":" in host else host
    page.hosts = tuple(f"{name}:{page.port}" for name in dict.fromkeys((named, "localhost", "127.0.0.1", "[::1]"))
                       if name == named or host in ("127.0.0.1", "::1", "localhost"))  # fmt: skip
    follower = threading.Thread(target=page.follow, name="approvals watch", daemon=True)
    follower.start()
    ready(f"http://{named}:{page.port}/?token={page.access}")
    try:
        server.serve_forever(poll_interval=0.5)
    finally:
        page.stopping.set()
        with page.changed:
            page.changed.notify_all()
        server.server_close()
        page.watch.close()
