"""Waking when permission requests may have changed, instead of reading the store again and again.

What waits on people (a held call in ``bgc mcp-proxy``, the approvals page) reads the store when
a :class:`Watch` sees a sign of change, and otherwise once every :data:`POLL_SECONDS`:

- PostgreSQL: ``LISTEN`` on the channel every write to a request notifies
  (:class:`bgc.runtime.store.postgresql.Listener`): every enforcer and page of a fleet wakes when
  an answer commits, on any machine.
- SQLite: the file and its write-ahead log, looked at with ``stat`` (no query, no lock): any
  commit changes one of them.

A sign of change is only a reason to read the store; a missed one delays a read by at most
:data:`POLL_SECONDS`, and nothing is ever decided from it.
"""

from __future__ import annotations

import os
import threading
import time
import weakref

POLL_SECONDS = 5.0
"""The longest anything waiting on people goes without reading the store when nothing wakes it."""
STAT_SECONDS = 0.25
"""How often a SQLite store's files are looked at (a ``stat`` each; the store is not read)."""


class Watch:
    """``wait(seconds)`` returns early when it sees a sign that the store changed."""

    def wait(self, seconds: float) -> None:
        time.sleep(seconds)

    def close(self) -> None:
        pass


class FileWatch(Watch):
    """A SQLite store: a change in the size or time of its file or its write-ahead log."""

    def __init__(self, path: str, interval: float = STAT_SECONDS) -> None:
        self.paths = (path, path + "-wal")
        self.interval = interval
        self.seen = self._look()

    def _look(self) -> tuple[tuple[int, int], ...]:
        found = []
        for path in self.paths:
            try:
                status = os.stat(path)
                found.append((status.st_mtime_ns, status.st_size))
            except OSError:
                found.append((0, -1))
        return tuple(found)

    def wait(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            time.sleep(min(self.interval, left))
            now = self._look()
            if now != self.seen:
                self.seen = now
                return


def watch_store(location: str) -> Watch:
    """The :class:`Watch` for the store at ``location`` (a ``postgresql://`` URL or a SQLite file)."""
    from bgc.runtime.store import URLS

    if location.startswith(URLS):
        from bgc.runtime.store.postgresql import listener

        return listener(location)  # type: ignore[return-value]
    return FileWatch(location)


class Wakes:
    """One :class:`Watch` shared by every thread that holds a call: a thread of its own waits on
    it and counts the signs of change; :meth:`wait` returns when the count moves (read the store),
    when ``stop`` is set, or after ``seconds``."""

    def __init__(self, location: str) -> None:
        self.location = location
        self._changed = threading.Condition()
        self._count = 0
        self._started = False
        self._watch: Watch | None = None
        self._seen: weakref.WeakKeyDictionary[threading.Event, int] = weakref.WeakKeyDictionary()

    def _follow(self) -> None:
        assert self._watch is not None
        while True:
            self._watch.wait(POLL_SECONDS)
            with self._changed:
                self._count += 1
                self._changed.notify_all()

    def _start(self) -> None:
        with self._changed:
            if self._started:
                return
            self._started = True
        try:
            self._watch = watch_store(self.location)
        except Exception:  # noqa: BLE001 - no watch: the holders read every POLL_SECONDS
            self._watch = Watch()
        threading.Thread(target=self._follow, name="store watch", daemon=True).start()

    def wait(self, stop: threading.Event, seconds: float) -> bool:
        """True when ``stop`` was set; False when the store may have changed since this holder
        (named by its ``stop``) last returned here, or ``seconds`` passed. A holder's first wait
        returns at once: what changed before the watch listened is read then. ``stop`` (set by
        another thread, which notifies nobody) is looked at every :data:`STAT_SECONDS`, in memory."""
        self._start()
        deadline = time.monotonic() + seconds
        with self._changed:
            seen = self._seen.get(stop, -1)
            while not stop.is_set():
                if self._count != seen:
                    self._seen[stop] = self._count
                    return False
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._changed.wait(min(STAT_SECONDS, left))
        return True
