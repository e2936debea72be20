"""An enforcer's wait on a permission request, as its own process (tests/e2e/test_approvals_wake.py).

Arguments: the store, the policy, the request id. It follows the request the way `bgc mcp-proxy`
follows a held call (:class:`bgc.app.store_watch.Wakes`), with the timer that would read the store
anyway set to an hour: every read it makes was woken by the store. Prints ``listening``, then, once
the request is approved, one JSON line: when it saw that (epoch seconds) and how many times it read.
"""

from __future__ import annotations

import json
import sys
import threading
import time

from bgc.app import store_watch
from bgc.core.policy.loader import cached_policy
from bgc.runtime.approvals import load_request, stored_standing, trusted_approvers
from bgc.runtime.store import open_store

store_watch.POLL_SECONDS = 3600.0
location, policy, request = sys.argv[1:4]
trusted = trusted_approvers(cached_policy(policy).trust)
store = open_store(location, create=False)
wakes = store_watch.Wakes(location)
stop = threading.Event()
reads = 0
wakes.wait(stop, 60)  # the first wait returns at once, listening from then on


def approved() -> bool:
    global reads
    loaded = load_request(store, request)
    reads += 1
    assert loaded is not None
    return stored_standing(store, loaded[0], loaded[1], trusted, int(time.time())).state == "approved"


assert not approved()  # the first read, before anyone can answer: every later one was woken
print("listening", flush=True)
while True:
    wakes.wait(stop, 600)
    if approved():
        print(json.dumps({"seen": time.time(), "reads": reads}), flush=True)
        break
