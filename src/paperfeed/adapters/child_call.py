"""One call made in a child process, so what it imports and allocates leaves with it (issue #39 item 6).

A long-lived background process (``paperfeed run``'s indexer, the scheduler) builds the topics now and
then: scikit-learn, UMAP, numba and llvmlite, once imported, stay in the process for good (the indexer
held 533 MB idle after building the topics of 391 papers, 93 MB before). :func:`call_in_child` runs
``module:function(*args, report=...)`` in a ``spawn`` child (a fork would copy the caller's threads and
database connections) and returns its result: ``report``'s lines are passed back to the caller's
``report`` as they come, an exception raised there is raised here (as :class:`ChildCallFailed` if it
cannot be pickled), and the child ignores Ctrl-C (the parent decides when work stops), exits when its
parent dies, and inherits the parent's priority.
"""

from __future__ import annotations

import contextlib
import importlib
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

__all__ = ["ChildCallFailed", "ChildCallStopped", "call_in_child", "serve_parent"]

_PARENT_POLL_SECONDS = 1.0


class ChildCallFailed(RuntimeError):
    """The child process ended without an answer, or its exception could not be sent back."""


class ChildCallStopped(ChildCallFailed):
    """The child was ended by a signal before it answered: a stop of its process group (``paperfeed
    run``'s supervisor sends SIGTERM to each child's group), not a fault of the work."""


def _watch_parent(parent: int) -> None:
    while True:
        time.sleep(_PARENT_POLL_SECONDS)
        if os.getppid() != parent:  # re-parented: whoever asked is gone
            os._exit(1)


def serve_parent(parent: int, *, ignore_term: bool = False) -> None:
    """In a child process: ignore Ctrl-C (the parent decides when work stops) and exit once ``parent`` is
    gone (polled every second), so a killed parent leaves no child behind.

    ``ignore_term``: ignore SIGTERM too, for a child its parent ends itself (a message, or a kill). A stop
    of the process group (``paperfeed run``'s supervisor, systemd) then reaches the parent alone, which
    stops as it decides, instead of seeing its child vanish mid-call and taking that for a crash."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if ignore_term:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True, name="parent-watch").start()


def _serve(target: str, args: tuple[Any, ...], conn: Connection, parent: int) -> None:
    serve_parent(parent)

    def report(line: str) -> None:
        conn.send(("report", line))

    try:
        module, _, name = target.partition(":")
        result = getattr(importlib.import_module(module), name)(*args, report=report)
    except BaseException as exc:
        try:
            conn.send(("error", exc))
        except Exception:  # an exception that does not pickle: its words do
            conn.send(("error", ChildCallFailed(f"{type(exc).__name__}: {exc}")))
        return
    conn.send(("done", result))


def call_in_child(
    target: str, *args: Any, report: Callable[[str], None] | None = None, name: str = "child"
) -> Any:
    """``fn(*args, report=...)`` in a child process, ``target`` naming ``fn`` as ``"module:function"``
    (imported there, so the caller need not import what ``fn`` does); ``args`` must pickle. Its result,
    or its exception raised here."""
    context = multiprocessing.get_context("spawn")
    ours, theirs = context.Pipe(duplex=False)
    process = context.Process(
        target=_serve, args=(target, args, theirs, os.getpid()), name=f"paperfeed-{name}", daemon=True
    )
    process.start()
    theirs.close()
    answered = False
    try:
        while True:
            try:
                kind, value = ours.recv()
            except EOFError:
                process.join(timeout=5)
                code = process.exitcode
                if code is not None and code < 0:
                    raise ChildCallStopped(
                        f"the {name} process was stopped by {signal.Signals(-code).name} before it answered"
                    ) from None
                raise ChildCallFailed(
                    f"the {name} process ended without an answer (exit code {process.exitcode}); "
                    "out of memory?"
                ) from None
            if kind == "report":
                if report is not None:
                    report(value)
                continue
            answered = True
            if kind == "error":
                raise value
            return value
    finally:
        ours.close()
        if answered:
            process.join(timeout=10)
        if process.is_alive():  # interrupted (a stop): its answer would come to nobody
            process.kill()
            with contextlib.suppress(Exception):
                process.join(timeout=5)
