"""Stopping a long-lived process (``paperfeed index --follow``, ``paperfeed scheduler``) within a few
seconds of SIGTERM or Ctrl+C.

Why not the obvious way. The indexer used to raise an exception from its signal handler, and the scheduler
set a flag it read between jobs. A Python handler runs only when the main thread next executes Python code,
so a signal that came during a forward pass of the model, a role-model fit, a topics build or a write that
waits for another process's lock waited for that C call to return (the scheduler: for the whole daily job);
and once the exception had unwound the loop, the interpreter's own teardown (collecting the model's and the
tokenizer's millions of objects) took seconds more: measured 3.6-5.4 s on a busy 2-core machine, past the
supervisor's 10 s under ``paperfeed run``, which then said "indexer did not stop in time: killing it" after
the indexer had promised a resume.

Here the handler only notes the signal. Python writes each signal's number to the wakeup fd the moment
it arrives, whatever the main thread is doing, so a watcher thread sees it at once and sets
:attr:`StopWatch.requested` (and calls ``on_request``, the scheduler's stop), which the main thread asks
between batches and waits on between looks for work. If the main thread reaches that point within ``grace``
seconds it ends cleanly (:meth:`finish`: its state reported, its final line, the store closed); if not (it
is inside a batch, loading the model, building topics, running a job), the watcher ends the process itself,
as ``kill -9`` would: every committed batch is kept and the database rolls the one in flight back (the
indexer is built for that: docs/data-model.md, "Atomic batches"; the scheduler's run is recorded as
interrupted and its lease taken over at the next start), saying ``forced(doing)``. Either way the process
leaves through ``os._exit`` after flushing its output, skipping the interpreter teardown, and at most one
final line is said.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from types import FrameType
from typing import NoReturn

__all__ = ["STOP_GRACE", "StopWatch"]

STOP_GRACE = 3.0  # seconds the main thread has to reach a clean stop, then as long again to finish it
_STOPPING = (signal.SIGTERM, signal.SIGINT)


def _noted(_signum: int, _frame: FrameType | None) -> None:
    """The Python-level handler: nothing to do, the wakeup fd has told the watcher already."""


class StopWatch:
    """Install in the main thread; ``doing`` says what the main thread is at (None: nothing in flight):
    the attribute, set by the main thread, unless ``doing`` is given (a callable the process's own loop
    answers); ``forced(doing)`` is the final line of a stop that cannot wait for it."""

    def __init__(
        self,
        say: Callable[[str], None],
        forced: Callable[[str | None], str],
        *,
        doing: Callable[[], str | None] | None = None,
        on_request: Callable[[], None] | None = None,
        grace: float = STOP_GRACE,
    ) -> None:
        self.say = say
        self.forced = forced
        self.grace = grace
        self.requested = threading.Event()
        self.doing: str | None = None
        self._doing = doing or (lambda: self.doing)
        self._on_request = on_request
        self._finishing = threading.Event()
        self._said = threading.Lock()  # whoever takes it says the one final line
        read, write = os.pipe()
        os.set_blocking(write, False)
        signal.set_wakeup_fd(write, warn_on_full_buffer=False)
        for sig in _STOPPING:
            signal.signal(sig, _noted)
        threading.Thread(target=self._watch, args=(read,), name="stop-watch", daemon=True).start()

    def _watch(self, fd: int) -> None:
        while not set(os.read(fd, 64)) & set(_STOPPING):
            pass  # another signal with a Python handler: not ours
        self.requested.set()
        if self._on_request is not None:
            self._on_request()
        if not self._finishing.wait(self.grace):
            self.end(self.forced(self._doing()))
        time.sleep(self.grace)  # a deadline for the main thread's last steps, not a synchronisation
        self.end(self.forced(None))  # its final line was not said yet: it was still working it out

    def finish(self, line: Callable[[], str | None], *then: Callable[[], None]) -> NoReturn:
        """The main thread's clean stop: say ``line()`` (what is left; None: nothing to say), run ``then``
        (report, close), leave. The watcher gives these ``grace`` seconds more before it ends the process
        anyway."""
        self._finishing.set()
        final = line()
        if self._said.acquire(blocking=False) and final is not None:
            self.say(final)
        try:
            for step in then:
                step()
        finally:
            self.end(None)

    def end(self, line: str | None) -> NoReturn:
        """Say ``line`` unless a final line was said, flush, and leave without the interpreter's teardown."""
        if line is not None and self._said.acquire(blocking=False):
            self.say(line)
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):  # a closed pipe: nothing more can be said
                stream.flush()
        os._exit(0)
