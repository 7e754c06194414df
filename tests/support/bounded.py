"""Run a call that must end, without waiting it out when it does not (a hang fails the test, not CI).

A bound here catches "never" or "the wrong timeout" (seconds against tens of seconds), never speed: keep
it many times above what the call needs on a loaded machine, so a pause of the machine cannot fail it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TypeVar

import pytest

__all__ = ["run_bounded"]

T = TypeVar("T")


def run_bounded(call: Callable[[], T], limit: float) -> tuple[T, float]:
    """Run ``call`` on a thread; return its value and seconds, re-raise its error, fail after ``limit`` s."""
    box: dict[str, object] = {}

    def run() -> None:
        try:
            box["value"] = call()
        except BaseException as exc:  # re-raised below, in the test's thread
            box["error"] = exc

    started = time.monotonic()
    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(limit)
    took = time.monotonic() - started
    if worker.is_alive():
        pytest.fail(f"the call was still running after {took:.1f} s")
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box["value"], took  # type: ignore[return-value]
