"""How many requests one remote store keeps in flight, and whether its server is answering at all.

A small web server (``python3 -m http.server``: a listen backlog of 5, one connection per
request) drops some of 128 connections made at once; those requests then wait, unanswered, until
their timeout. :class:`AdaptiveLimit` cuts the number in flight (halving, down to 1) on such a
failure, or on answers so late that they waited in the server's queue, and grows it back slowly
on success (AIMD, as TCP does); ``max_in_flight`` stays its ceiling. :class:`ServerHealth`
tells one stalled object (the server answers others meanwhile) from a server that stopped
answering: only the latter makes later requests fail at once.
"""

from __future__ import annotations

import asyncio
import threading
import time

#: an answer later than this, and LATE_FACTOR times the quickest one, waited in a queue: too many in flight
LATE_S = 1.0
LATE_FACTOR = 10.0
#: the limit grows only on answers this quick (or QUICK_FACTOR times the quickest): no queue building
QUICK_S = 0.25
QUICK_FACTOR = 4.0


class AdaptiveLimit:
    """An additive-increase, multiplicative-decrease bound on concurrent requests (one event loop).

    A failure cuts the limit at most once per round: failures of requests that started before the
    last cut (the same burst) do not cut it again."""

    def __init__(self, ceiling: int) -> None:
        self.ceiling = max(1, ceiling)
        self.limit = float(self.ceiling)
        self.in_flight = 0
        self._changed = asyncio.Condition()
        self._cut_at = 0.0
        self.fastest = float("inf")  # the quickest answer seen: a server's time with no queue

    @property
    def allowed(self) -> int:
        """Requests that may be in flight now (at least 1)."""
        return max(1, int(self.limit))

    async def acquire(self) -> float:
        """Wait for a free place; the monotonic time the request starts (give it to release)."""
        async with self._changed:
            await self._changed.wait_for(lambda: self.in_flight < self.allowed)
            self.in_flight += 1
        return time.monotonic()

    async def release(self, started: float, congested: bool) -> None:
        """A request that started at `started` ended: cut the limit if it met congestion (or was
        answered so late that it waited in the server's queue), else grow it."""
        seconds = time.monotonic() - started
        async with self._changed:
            self.in_flight -= 1
            if not congested:
                late = seconds > LATE_S and seconds > LATE_FACTOR * self.fastest
                self.fastest = min(self.fastest, seconds)
                congested = late
            if congested:
                if started >= self._cut_at:
                    self.limit = max(1.0, self.limit / 2)
                    self._cut_at = time.monotonic()
            elif seconds <= max(QUICK_S, QUICK_FACTOR * self.fastest):  # no queue in the way: one more
                self.limit = min(float(self.ceiling), self.limit + 1.0 / self.limit)
            self._changed.notify_all()


class ServerHealth:
    """Whether a server answers, shared by every event loop using one store (thread-safe).

    The server is *down* once requests for two different objects failed on the way (no answer, a
    refused or dropped connection), the second a new object asked after the first failure was
    known, and no answer came since the first of them started. While down (``timeout_s``, or until
    :meth:`reset`) requests are not made. Objects that stall while others are answered, or that
    stalled together in one burst, never make the server down."""

    def __init__(self, timeout_s: float) -> None:
        self.timeout_s = timeout_s
        self._lock = threading.Lock()
        self._last_answer = 0.0
        self._unanswered: dict[str, float] = {}  # failed key -> when its attempt started
        self._first_failure: float | None = None  # when the first of those failures was known
        self._down: tuple[float, str] | None = None  # since when, and the first request not answered

    def answered(self) -> None:
        with self._lock:
            self._last_answer = time.monotonic()
            self._unanswered.clear()
            self._first_failure = None
            self._down = None

    def last_answer(self) -> float:
        with self._lock:
            return self._last_answer

    def failed(self, where: str, started: float) -> None:
        """A request for `where`, started at `started`, got no answer (a transport failure)."""
        now = time.monotonic()
        with self._lock:
            if self._last_answer >= started or self._down is not None:
                return
            if self._first_failure is None:
                self._first_failure = now
            new = where not in self._unanswered
            self._unanswered.setdefault(where, started)
            if new and started > self._first_failure and len(self._unanswered) >= 2:
                self._down = (now, min(self._unanswered, key=self._unanswered.__getitem__))

    def down(self) -> str | None:
        """The first request not answered while the server is down; None when requests may be made."""
        with self._lock:
            if self._down is None:
                return None
            if time.monotonic() - self._down[0] >= self.timeout_s:
                self._down, self._first_failure = None, None
                self._unanswered.clear()
                return None
            return self._down[1]

    def down_for(self) -> tuple[str, float] | None:
        """(the first request not answered, seconds the server stays down) while it is down; else None."""
        first = self.down()
        with self._lock:
            if first is None or self._down is None:
                return None
            return first, max(0.0, self.timeout_s - (time.monotonic() - self._down[0]))

    def reset(self) -> None:
        """Forget every failure: the user asked to retry."""
        with self._lock:
            self._unanswered.clear()
            self._first_failure = None
            self._down = None
