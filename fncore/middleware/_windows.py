"""``rate_limit``'s windows in this process (``memory://``): a moving one and a fixed one.

Each is a few numbers updated without awaiting anything, so a check and its count are one
step on the event loop. Hits that left a window are dropped as new hits come, and a fixed
window starts again when its time is up: nothing runs in the background (no clean-up task,
no timer, no worker thread), so a hit costs the same whether or not the event loop turns
between calls.

The rules are those of the `limits` library's windows, which ``redis://`` uses: a hit
counts in a moving window for ``seconds`` after it (up to and including the instant it
leaves); a fixed window ends ``seconds`` after the hit that found it empty.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

__all__ = ["FixedWindow", "InProcess", "MovingWindow", "Refusal"]

Limit = Literal["requests_per_minute", "tokens_per_minute", "max_concurrent"]
"""Which limit refused a call."""


@dataclass(frozen=True, slots=True)
class Refusal:
    """A call the rates refused now: which limit, and the seconds until it may pass."""

    limit: Limit
    wait: float


class MovingWindow:
    """At most ``limit`` hits in any ``seconds``, exactly.

    Example:
        >>> window = MovingWindow(2, 60)
        >>> window.wait(0.0), window.hit(0.0), window.hit(1.0), window.wait(30.0)
        (None, None, None, 30.0)
        >>> window.wait(60.0), window.wait(60.5)  # the first hit counts until 60.0 inclusive
        (0.0, None)
    """

    __slots__ = ("_hits", "limit", "seconds")

    def __init__(self, limit: int, seconds: float) -> None:
        self.limit = limit
        self.seconds = seconds
        self._hits: deque[float] = deque()
        """When each hit still in the window was counted, oldest first."""

    def wait(self, now: float) -> float | None:
        """``None`` if a hit at ``now`` fits, else the seconds until one does."""
        hits = self._hits
        since = now - self.seconds
        while hits and hits[0] < since:
            hits.popleft()
        if len(hits) < self.limit:
            return None
        return hits[0] - since

    def hit(self, now: float) -> None:
        """Count a hit at ``now`` (checked first with `wait`)."""
        self._hits.append(now)

    def take(self, now: float) -> float | None:
        """`hit` at ``now`` if it fits (``None``), else the seconds until one does (`wait`)."""
        wait = self.wait(now)
        if wait is None:
            self._hits.append(now)
        return wait


class FixedWindow:
    """At most ``limit`` in one window of ``seconds``, which starts with what it first counts.

    ``ends`` names the current window: a window that ended counts nothing, and what is
    given back to a window that ended is given to nothing.

    Example:
        >>> window = FixedWindow(100, 60)
        >>> window.add(70, 0.0), window.wait(40, 10.0)
        (60.0, 50.0)
        >>> window.give_back(30, 60.0, 10.0), window.wait(40, 10.0)
        (None, None)
    """

    __slots__ = ("count", "ends", "limit", "seconds")

    def __init__(self, limit: int, seconds: float) -> None:
        self.limit = limit
        self.seconds = seconds
        self.count = 0
        self.ends = -float("inf")

    def wait(self, amount: int, now: float) -> float | None:
        """``None`` if ``amount`` fits at ``now``, else the seconds until the window ends."""
        if self.ends <= now:
            self.count = 0
        if self.count + amount <= self.limit:
            return None
        return self.ends - now

    def add(self, amount: int, now: float) -> float:
        """Count ``amount`` at ``now``; return when the window it counted in ends."""
        if self.ends <= now:
            self.count = 0
        self.count += amount
        if self.count == amount:  # it was empty: a window starts
            self.ends = now + self.seconds
        return self.ends

    def give_back(self, amount: int, window: float, now: float) -> None:
        """Take ``amount`` back from the window that ends at ``window``, never below zero."""
        if self.ends == window and window > now:
            self.count = max(self.count - amount, 0)


class InProcess:
    """Per model, a moving window of requests and a fixed window of tokens, in this process.

    A lock makes each check with its count one step for event loops in several threads too.

    Args:
        requests: Requests per window (``None``: no limit).
        tokens: Tokens per window (``None``: no limit).
        seconds: The windows' length.
        clock: What tells the time, in seconds (monotonic).
    """

    __slots__ = ("_clock", "_lock", "_windows", "requests", "seconds", "tokens")

    def __init__(
        self,
        requests: int | None,
        tokens: int | None,
        seconds: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._clock = clock
        self.requests = requests
        self.tokens = tokens
        self.seconds = seconds
        self._windows: dict[str, tuple[MovingWindow | None, FixedWindow | None]] = {}
        self._lock = threading.Lock()

    def _of(self, model: str) -> tuple[MovingWindow | None, FixedWindow | None]:
        windows = self._windows.get(model)
        if windows is None:
            requests, tokens, seconds = self.requests, self.tokens, self.seconds
            windows = self._windows[model] = (
                None if requests is None else MovingWindow(requests, seconds),
                None if tokens is None else FixedWindow(tokens, seconds),
            )
        return windows

    def take(self, model: str, reserved: int) -> Refusal | float:
        """A request and ``reserved`` tokens for ``model``, both or neither.

        Returns:
            When the tokens' window ends (it names the window to settle with; 0 without a
            token limit), or the `Refusal` of the first limit that has no room.
        """
        now = self._clock()
        with self._lock:
            moving, fixed = self._windows.get(model) or self._of(model)
            if fixed is not None and (wait := fixed.wait(reserved, now)) is not None:
                return Refusal("tokens_per_minute", wait)
            if moving is not None and (wait := moving.take(now)) is not None:
                return Refusal("requests_per_minute", wait)
            return 0.0 if fixed is None else fixed.add(reserved, now)

    def settle(self, model: str, reserved: int, window: float, used: int) -> None:
        """Settle ``reserved`` tokens, taken in ``window``, with the ``used`` ones.

        What was not used goes back to that window, if it has not ended; what was used
        beyond the reservation counts in the current window.
        """
        if used == reserved:
            return
        now = self._clock()
        with self._lock:
            fixed = (self._windows.get(model) or self._of(model))[1]
            if fixed is None:
                return
            if used < reserved:
                fixed.give_back(reserved - used, window, now)
            else:
                fixed.add(used - reserved, now)
