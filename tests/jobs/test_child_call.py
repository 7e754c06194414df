"""A call in a child process stopped by a signal (``paperfeed run``'s stop SIGTERMs each child's process
group, the topics child included) is a stop, said in one line, not a fault with a traceback."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable

import pytest

from paperfeed.adapters.child_call import ChildCallFailed, ChildCallStopped, call_in_child


def stopped_by_sigterm(report: Callable[[str], None]) -> None:
    report("building")
    os.kill(os.getpid(), signal.SIGTERM)


def exits_without_answer(report: Callable[[str], None]) -> None:
    os._exit(3)


def answers(n: int, report: Callable[[str], None]) -> int:
    report(f"got {n}")
    return n * 2


def test_a_child_ended_by_sigterm_is_a_stop_not_a_failure() -> None:
    lines: list[str] = []
    with pytest.raises(ChildCallStopped, match="stopped by SIGTERM"):
        call_in_child(f"{__name__}:stopped_by_sigterm", report=lines.append, name="topics")
    assert lines == ["building"]


def test_a_child_that_exits_without_an_answer_is_still_a_failure() -> None:
    with pytest.raises(ChildCallFailed, match="exit code 3") as caught:
        call_in_child(f"{__name__}:exits_without_answer", name="topics")
    assert not isinstance(caught.value, ChildCallStopped)


def test_a_child_answers() -> None:
    lines: list[str] = []
    assert call_in_child(f"{__name__}:answers", 21, report=lines.append) == 42
    assert lines == ["got 21"]
