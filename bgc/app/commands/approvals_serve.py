"""``bgc approvals serve``: one person's approvals page over the store (:mod:`bgc.app.approvals_page`).

The person starts it with their own key, as they would run ``bgc approve``: the key is loaded
and checked against the policy's ``trust approver`` lines here, and every answer given on the
page is signed in this process by :func:`bgc.app.commands.approvals.sign_and_record`, the code
``bgc approve`` runs. The browser never receives the key, and the agent, which cannot read the
person's key file, cannot sign through a page it does not hold the token of.
"""

from __future__ import annotations

from collections.abc import Sequence

from bgc.app.commands.io import store_at, write_line
from bgc.errors import ExitCode, UsageError

LOOPBACK = ("127.0.0.1", "::1", "localhost")


def run(location: str, *, key_path: str, approver: str | None, policy: str | None, host: str, port: int,
        webhooks: Sequence[str] = (), webhook_format: str = "json", desktop: bool = False,
        rules: Sequence[str] = ()) -> ExitCode:  # fmt: skip
    """Serve until interrupted; the URL (with its one-start token) is printed first. A request
    that starts waiting meanwhile (under one of ``rules``, when given) is announced to
    ``webhooks`` and the ``desktop`` (:mod:`bgc.app.approvals_notify`)."""
    from bgc.app import approvals_notify
    from bgc.app import approvals_page
    from bgc.app.store_watch import watch_store
    from bgc.app.commands.approvals import _trusted, approver_key, sign_and_record
    from bgc.app.commands import io

    if not 0 <= port <= 65535:
        raise UsageError(f"--port must be from 0 to 65535, not {port}")
    if host in ("0.0.0.0", "::", ""):
        raise UsageError(f"--host {host!r} is every address: name the one people open (the page answers only to "
                         "the address it was started on, so that no other site's name can reach it)")  # fmt: skip
    if webhook_format not in approvals_notify.FORMATS:
        raise UsageError(f"--webhook-format {webhook_format!r}: one of {', '.join(approvals_notify.FORMATS)}")
    notifier = approvals_notify.Notifier(approvals_notify.checked_webhooks(webhooks), webhook_format, desktop,
                                         tuple(rules))  # fmt: skip
    loaded, _ = io.load_policy(policy, None)
    trusted = _trusted(policy)
    key, name = approver_key(key_path, approver, trusted)
    store = store_at(location, create=False)
    watch = watch_store(location)

    def sign(request_id: str, decision: str) -> str:
        given = sign_and_record(store, request_id, decision, key, name, trusted)
        return f"{decision} by {name} recorded for {request_id}; now {given.standing.describe(given.request)}"

    page = approvals_page.Page(store, trusted, approvals_page.rule_reasons(loaded), name, sign, watch,
                               policy_path=loaded.path,
                               notify=lambda waiting: notifier.send(approvals_notify.notice(waiting)))  # fmt: skip

    def ready(url: str) -> None:
        if host not in LOOPBACK:
            write_line(f"bgc approvals: listening on {host}, beyond this machine: the token crosses the network "
                       "in the clear over http (prefer an SSH tunnel to a loopback server)")  # fmt: skip
        write_line(f"bgc approvals: {name}'s approvals page (Ctrl-C stops it):\n    {url}")
        import sys

        sys.stdout.flush()

    try:
        approvals_page.serve(page, host, port, ready)
    except KeyboardInterrupt:
        pass
    except OSError as error:
        raise UsageError(f"cannot listen on {host}:{port}: {error.strerror or error}") from None
    finally:
        store.close()
    return ExitCode.OK
