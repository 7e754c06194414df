"""Run a command on a real pseudo-terminal of a given size, as a person at a terminal would."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import subprocess
import termios
from collections.abc import Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class OnTerminal:
    code: int
    screen: str  # what the command wrote to the terminal (its stdout), \r\n made \n
    stderr: str

    @property
    def text(self) -> str:
        """:attr:`screen` without its colours and styles."""
        return _ANSI.sub("", self.screen)


_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")


def run_on_terminal(
    argv: Sequence[str], *, columns: int, rows: int = 50, env: Mapping[str, str], timeout: float = 120
) -> OnTerminal:
    """``argv`` with its stdout on a pty ``columns`` wide (stdin too; stderr a pipe, kept apart)."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
    clean = {k: v for k, v in env.items() if k not in ("COLUMNS", "LINES", "NO_COLOR", "FORCE_COLOR")}
    try:
        proc = subprocess.Popen(
            list(argv),
            stdin=follower,
            stdout=follower,
            stderr=subprocess.PIPE,
            env={**clean, "TERM": "xterm-256color"},
        )
    finally:
        os.close(follower)
    chunks: list[bytes] = []
    try:
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: every writer of the terminal closed it
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(leader)
    assert proc.stderr is not None
    err = proc.stderr.read().decode()
    code = proc.wait(timeout=timeout)
    return OnTerminal(code, b"".join(chunks).decode().replace("\r\n", "\n"), err)
