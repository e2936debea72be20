"""Telling a person that a call waits for them: a webhook (JSON, or Slack's incoming-webhook
shape) and the desktop's notification, from ``bgc approvals serve``.

A message names the request and what it is about (tool, server, rule and its ``because``, who
may answer, when it expires), never the call's parameters: they may hold secrets, and a
notification travels through services the store's readers do not control. It carries no link
with the page's token either; the person opens the page they started.

Delivery never blocks the page and never decides anything: a notifier that fails is reported on
stderr and the request waits as before.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

FORMATS = ("json", "slack")
WEBHOOK_SECONDS = 10.0
"""How long one webhook delivery may take before it is given up."""


@dataclass(frozen=True, slots=True)
class Notice:
    """What a notification says: nothing of the call's parameters."""

    request: str
    tool: str
    server: str
    rule: str
    because: str | None
    needs: str
    expires: int
    session: str | None

    def text(self) -> str:
        why = f" ({self.because})" if self.because else ""
        expires = time.strftime("%H:%M UTC", time.gmtime(self.expires))
        return (f"bgc: {self.tool} on {self.server} waits for approval: rule {self.rule}{why}; needs {self.needs}; "
                f"expires {expires}. Request {self.request}.")  # fmt: skip

    def data(self) -> dict[str, Any]:
        return {"event": "permission-request", "request": self.request, "tool": self.tool, "server": self.server,
                "rule": self.rule, "because": self.because, "needs": self.needs, "expires": self.expires,
                "session": self.session, "text": self.text()}  # fmt: skip


def notice(waiting: Any) -> Notice:
    """The :class:`Notice` of a request the page shows (:class:`bgc.app.approvals_page.Waiting`)."""
    request = waiting.request
    return Notice(waiting.id, request.tool, request.server, request.rule, waiting.because, request.needs(),
                  request.expires, request.session)  # fmt: skip


@dataclass(frozen=True, slots=True)
class Notifier:
    """Where this person is told: webhooks (each ``json`` or ``slack``), the desktop, and which
    rules (``FILE:LINE`` as requests cite them; empty: every rule)."""

    webhooks: tuple[str, ...] = ()
    webhook_format: str = "json"
    desktop: bool = False
    rules: tuple[str, ...] = ()

    def wanted(self, found: Notice) -> bool:
        return not self.rules or any(rule.strip() in self.rules for rule in found.rule.split(","))

    def send(self, found: Notice) -> None:
        """Deliver in a thread of its own: the page never waits for a slow receiver."""
        if self.wanted(found) and (self.webhooks or self.desktop):
            threading.Thread(target=self._deliver, args=(found,), name="notify", daemon=True).start()

    def _deliver(self, found: Notice) -> None:
        payload = {"text": found.text()} if self.webhook_format == "slack" else found.data()
        for url in self.webhooks:
            _post(url, payload)
        if self.desktop:
            _desktop(found)


def _post(url: str, payload: dict[str, Any]) -> None:
    from urllib.error import URLError
    from urllib.request import Request, urlopen

    body = json.dumps(payload, ensure_ascii=False).encode()
    request = Request(url, data=body, method="POST", headers={"Content-Type": "application/json"})
    try:
        with urlopen(request, timeout=WEBHOOK_SECONDS) as response:  # noqa: S310 - http(s) only, checked at start
            response.read(4096)
    except (URLError, OSError, ValueError) as error:
        _say(f"the webhook for request {payload.get('request', '')} was not delivered: {error}")


def _desktop(found: Notice) -> None:
    program = shutil.which("notify-send")
    if program is None:
        return
    try:
        subprocess.run([program, "--app-name=bgc", "bgc: approval needed", found.text()],
                       check=False, timeout=WEBHOOK_SECONDS, capture_output=True)  # fmt: skip
    except (OSError, subprocess.SubprocessError) as error:
        _say(f"the desktop notification was not shown: {error}")


def _say(text: str) -> None:
    sys.stderr.write(f"bgc approvals: {text}\n")
    sys.stderr.flush()


def checked_webhooks(urls: Sequence[str]) -> tuple[str, ...]:
    """The webhook URLs, each ``http://`` or ``https://`` with a host; anything else is refused
    before the page starts (a ``file:`` URL would read a file, not tell anyone)."""
    from urllib.parse import urlsplit

    from bgc.errors import UsageError

    for url in urls:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            shown = f"{parts.scheme}://{parts.hostname or ''}…"  # never the rest: a webhook's path is its secret
            raise UsageError(f"--webhook {shown} is not an http:// or https:// URL")
    return tuple(urls)
