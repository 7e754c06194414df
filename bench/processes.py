"""Stopping the product's processes the way a user does, for the benches that run them."""

from __future__ import annotations

import signal
import subprocess
from typing import Any

__all__ = ["interrupt"]


def interrupt(proc: subprocess.Popen[Any], timeout: float = 60.0) -> None:
    """Ctrl+C (SIGINT) to ``proc``, as a user stops ``paperfeed run`` or ``index``; killed if it has not
    exited within ``timeout`` seconds."""
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
