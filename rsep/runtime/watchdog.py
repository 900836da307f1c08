"""A limit on one evaluation's time that holds while the evaluation runs.

A pyoxigraph query cannot be cancelled from Python, so checking the time after an
evaluation (what the engine does without a watchdog) comes only when a runaway query is
done, minutes later. pyoxigraph releases the GIL while it evaluates, so one daemon thread
can watch the clock and act when the limit passes: the CLI reports the error, flushes what
was output and ends the process. Each evaluation costs two stores of a float.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


class Watchdog:
    """Calls ``on_overrun(what)`` once, from its own thread, when an evaluation begun with
    :meth:`begin` has not ended (:meth:`end`) ``seconds`` later. :meth:`close` ends the
    thread: a process that watches many engines in turn (``rsep serve``) would otherwise
    keep one polling thread per engine it ever had."""

    def __init__(self, seconds: float, on_overrun: Callable[[str], None], *,
                 tick: float = 0.05) -> None:
        self.seconds = seconds
        self.on_overrun = on_overrun
        self.tick = min(tick, seconds / 4)
        self._deadline: float | None = None
        self._what = ""
        self._thread: threading.Thread | None = None
        self._closed = threading.Event()

    def begin(self, what: str) -> None:
        self._what = what
        self._deadline = time.monotonic() + self.seconds
        if self._thread is None and not self._closed.is_set():
            self._thread = threading.Thread(target=self._watch, name="rsep-watchdog", daemon=True)
            self._thread.start()

    def end(self) -> None:
        self._deadline = None

    def close(self) -> None:
        """No more evaluations are watched; the thread ends within a tick."""
        self._deadline = None
        self._closed.set()

    def _watch(self) -> None:
        while not self._closed.wait(self.tick):
            d = self._deadline
            if d is not None and time.monotonic() > d:
                self.on_overrun(self._what)
                return
