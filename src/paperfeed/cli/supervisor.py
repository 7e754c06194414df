"""The process supervisor behind ``paperfeed run``: web server, scheduler and indexer as one unit.

Each child is ``python -m paperfeed … serve|scheduler|index --follow`` in its own process group, so a
Ctrl+C in the terminal reaches the supervisor only, which then stops the children in order: SIGTERM to
each group, a wait, SIGKILL to what is left. A child that dies is restarted after an exponential
back-off (reset once it has stayed up a while); one that keeps crashing is reported with its last lines
and given up. Children relay their output line by line through the supervisor's console, prefixed with
the time (UTC) and their name, and the supervisor publishes their state (``SupervisorStatusStore``) for
``paperfeed jobs status`` and /admin/jobs.

No orphans when the supervisor itself is killed hard (SIGKILL, OOM): each child calls
:func:`follow_parent` when it starts, which on Linux asks the kernel for SIGTERM when its parent dies
(``PR_SET_PDEATHSIG``) and everywhere watches its parent pid, exiting on its own if it is still there
after a grace period. Children are therefore spawned from the main thread only (the death signal
follows the thread that forked them).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import FrameType

from rich.console import Console
from rich.markup import escape
from rich.text import Text

from paperfeed.domain.supervision import ChildStatus, SupervisorStatus, SupervisorStatusStore
from paperfeed.domain.wording import count

__all__ = ["PARENT_ENV", "Backoff", "ChildSpec", "Supervisor", "follow_parent"]

PARENT_ENV = "PAPERFEED_SUPERVISOR_PID"
_PR_SET_PDEATHSIG = 1


@dataclass(frozen=True)
class ChildSpec:
    """One supervised command. ``busy_exit`` is the exit code meaning "another process does this"
    (``paperfeed scheduler`` exits 4 when the scheduler lease is held): the child waits in ``standby``
    and is tried again later, not counted as a crash. An ``essential`` child that fails for good stops the
    whole unit (without the web server there is nothing to supervise for)."""

    name: str
    argv: Sequence[str]
    style: str = "cyan"
    essential: bool = False
    busy_exit: int | None = None
    busy_note: str = "held by another process"


@dataclass(frozen=True)
class Backoff:
    """Restart timing: ``initial`` × 2ⁿ⁻¹ after the n-th crash in a row, at most ``maximum`` seconds; a
    child that ran ``stable_after`` seconds starts a fresh count; ``give_up_after`` crashes in a row and it
    is not restarted again. ``stop_timeout``: how long children get to exit on SIGTERM before SIGKILL."""

    initial: float = 1.0
    maximum: float = 60.0
    stable_after: float = 60.0
    give_up_after: int = 8
    standby_retry: float = 60.0
    stop_timeout: float = 10.0

    def delay(self, crashes: int) -> float:
        return float(min(self.maximum, self.initial * 2 ** max(0, crashes - 1)))


@dataclass
class _Child:
    spec: ChildSpec
    proc: subprocess.Popen[bytes] | None = None
    state: str = "starting"
    restarts: int = 0
    last_exit: int | None = None
    since: datetime = field(default_factory=lambda: datetime.now(UTC))
    note: str | None = None
    crashes: int = 0
    started: float = 0.0
    next_start: float = 0.0
    reader: threading.Thread | None = None
    tail: deque[str] = field(default_factory=lambda: deque(maxlen=8))

    def status(self) -> ChildStatus:
        pid = self.proc.pid if self.proc is not None else None
        spec, state = self.spec, self.state
        return ChildStatus(spec.name, pid, state, self.restarts, self.last_exit, self.since, self.note)


_STAMP = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)(?: UTC)? ")


def stamp(now: datetime) -> str:
    """The time every line of ``paperfeed run``'s log starts with: UTC, as ``jobs status`` says times."""
    return f"{now.astimezone(UTC):%Y-%m-%d %H:%M:%S} "


def _own_stamp(line: str) -> tuple[str | None, str]:
    """A child's line that starts with its own time in :func:`stamp`'s form: that time and the rest."""
    found = _STAMP.match(line)
    return (found.group(1) + " ", line[found.end() :]) if found else (None, line)


def _exit_text(code: int) -> str:
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with code {code}"


class Supervisor:
    """Runs ``specs`` until SIGINT/SIGTERM (or an essential child fails); :meth:`run` gives the exit code."""

    def __init__(
        self,
        specs: Sequence[ChildSpec],
        *,
        console: Console,
        identity: str,
        status: SupervisorStatusStore | None = None,
        is_dead: Callable[[str], bool] = lambda _identity: False,
        backoff: Backoff | None = None,
        env: Mapping[str, str] | None = None,
        url: str | None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        """``url``: the site's public URL, published in the status; ``clock``: the time each line of the log
        is stamped with (UTC)."""
        self.children = [_Child(spec) for spec in specs]
        self.console = console
        self.identity = identity
        self.status = status
        self.is_dead = is_dead
        self.backoff = backoff or Backoff()
        self.env = dict(env or {})
        self.url = url  # the site's public URL, published for commands in other shells
        self.clock = clock
        self.started_at = datetime.now(UTC)
        self._signal: int | None = None
        self._force = False
        self._failed_essential: str | None = None
        self._print_lock = threading.Lock()
        self._status_failed = False

    # -- output -------------------------------------------------------------------------------------------

    def say(self, message: str, style: str = "") -> None:
        """A line of the supervisor's own (markup allowed)."""
        with self._print_lock:
            self.console.print(
                Text.assemble(
                    (stamp(self.clock()), "dim"),
                    ("run".ljust(10), "bold"),
                    Text.from_markup(message, style=style),
                ),
                soft_wrap=True,
                highlight=False,
            )

    def _relay(self, child: _Child, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stdout is not None
        prefix = (child.spec.name.ljust(10), child.spec.style)
        for raw in iter(proc.stdout.readline, b""):
            line = raw.decode("utf-8", "replace").rstrip("\r\n")
            if not line.strip():
                continue
            child.tail.append(line)
            when, line = _own_stamp(line)  # a child that stamps its lines (the scheduler) keeps its time
            with self._print_lock:
                self.console.print(
                    Text.assemble((when or stamp(self.clock()), "dim"), prefix, line),
                    soft_wrap=True,
                    highlight=False,
                )
        proc.stdout.close()

    def _publish(self) -> None:
        if self.status is None:
            return
        status = SupervisorStatus(
            self.identity,
            os.getpid(),
            self.started_at,
            datetime.now(UTC),
            tuple(c.status() for c in self.children),
            url=self.url,
        )
        try:
            self.status.publish(status)
        except OSError as exc:
            if not self._status_failed:  # say it once: supervising matters more than reporting
                self._status_failed = True
                self.say(f"[yellow]cannot write the status file[/] ({escape(str(exc))})")

    def _set(self, child: _Child, state: str, note: str | None = None) -> None:
        child.state, child.note, child.since = state, note, datetime.now(UTC)
        self._publish()

    # -- children -----------------------------------------------------------------------------------------

    def _spawn(self, child: _Child) -> None:
        env = {
            **os.environ,
            **self.env,
            PARENT_ENV: str(os.getpid()),
            "PYTHONUNBUFFERED": "1",
            "COLUMNS": str(max(80, self.console.width - 10)),
        }
        try:
            proc = subprocess.Popen(
                list(child.spec.argv),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                env=env,
                process_group=0,  # Ctrl+C in the terminal reaches the supervisor only
            )
        except OSError as exc:
            child.proc = None
            child.last_exit = None
            self._crashed(child, time.monotonic(), f"could not be started ({exc})", 0.0)
            return
        if child.state in ("restarting", "failed"):
            child.restarts += 1
        child.proc, child.started = proc, time.monotonic()
        child.reader = threading.Thread(
            target=self._relay, args=(child, proc), name=f"relay-{child.spec.name}", daemon=True
        )
        child.reader.start()
        self._set(child, "running")

    def _reap_group(self, pid: int, sig: int = signal.SIGKILL) -> None:
        """Signal what is left of a child's process group (its own children, if it had any)."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, sig)

    def _exited(self, child: _Child, now: float) -> None:
        proc = child.proc
        assert proc is not None
        code = proc.returncode
        uptime = now - child.started
        self._reap_group(proc.pid)
        if child.reader is not None:
            child.reader.join(timeout=2)
        child.proc, child.last_exit = None, code
        spec = child.spec
        if spec.busy_exit is not None and code == spec.busy_exit:
            if child.state != "standby" or child.note != spec.busy_note:
                self.say(
                    f"[yellow]{spec.name}: {escape(spec.busy_note)}[/]; the rest runs without it here, "
                    f"and it is tried again every {self.backoff.standby_retry:g} s"
                )
            child.next_start = now + self.backoff.standby_retry
            child.crashes = 0
            self._set(child, "standby", spec.busy_note)
            return
        self._crashed(child, now, _exit_text(code), uptime)

    def _crashed(self, child: _Child, now: float, what: str, uptime: float) -> None:
        name = child.spec.name
        if uptime >= self.backoff.stable_after:
            child.crashes = 0
        child.crashes += 1
        if child.crashes >= self.backoff.give_up_after:
            self.say(
                f"[bold red]{name} keeps crashing[/]: it {escape(what)}, {count(child.crashes, 'time')} "
                "in a row, "
                f"each within {self.backoff.stable_after:g} s of starting; it is not restarted again. "
                + ("Its last lines are above." if child.tail else "It printed nothing.")
            )
            self._set(child, "failed", f"{count(child.crashes, 'crash')} in a row, last: {what}")
            if child.spec.essential:
                self._failed_essential = name
            return
        delay = self.backoff.delay(child.crashes)
        self.say(
            f"[yellow]{name} {escape(what)}[/] after {uptime:.1f} s; restarting it in {delay:g} s"
            + (f" (crash {child.crashes} in a row)" if child.crashes > 1 else "")
        )
        child.next_start = now + delay
        self._set(child, "restarting", what)

    # -- the loop -----------------------------------------------------------------------------------------

    def _on_signal(self, signum: int, _frame: FrameType | None) -> None:
        if self._signal is not None:
            self._force = True  # a second Ctrl+C: do not wait for the children
        self._signal = signum

    def run(self, *, warm_up: Callable[[], None] | None = None, first: Sequence[str] = ("web",)) -> int:
        """Start every child, keep them alive, and stop them all on SIGINT/SIGTERM/SIGHUP.

        With ``warm_up``, the children named in ``first`` start, then ``warm_up`` runs in this thread
        (``paperfeed run``'s fill of the window: the site is served while it fills), then the others
        start. A signal during ``warm_up`` interrupts it (it is resumable) and stops everything.
        """
        handled = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
        previous = {sig: signal.signal(sig, self._on_signal) for sig in handled}
        try:
            self._forget_dead_supervisors()
            later = self.children
            if warm_up is not None:
                now_ = [child for child in self.children if child.spec.name in first]
                later = [child for child in self.children if child.spec.name not in first]
                for child in now_:
                    self._spawn(child)
                self._warm_up(warm_up)
            for child in later:
                if self._signal is None:
                    self._spawn(child)
            while self._signal is None and self._failed_essential is None:
                now = time.monotonic()
                for child in self.children:
                    if child.proc is not None and child.proc.poll() is not None:
                        self._exited(child, now)
                    elif (
                        child.proc is None
                        and child.state in ("restarting", "standby")
                        and now >= child.next_start
                    ):
                        self._spawn(child)
                time.sleep(0.2)
        finally:
            self._stop_all()
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            if self.status is not None:
                with contextlib.suppress(OSError):
                    self.status.withdraw(os.getpid())
        if self._failed_essential is not None:
            self.say(f"[bold red]stopped[/]: {self._failed_essential} could not be kept running")
            return 1
        return 0

    def _warm_up(self, work: Callable[[], None]) -> None:
        """Run ``work`` with signals raising KeyboardInterrupt in it, so Ctrl+C stops it at once."""

        def interrupt(signum: int, _frame: FrameType | None) -> None:
            self._signal = signum
            raise KeyboardInterrupt

        handled = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
        previous = {sig: signal.signal(sig, interrupt) for sig in handled}
        try:
            work()
        except KeyboardInterrupt:
            self._signal = self._signal or signal.SIGINT
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def _stop_all(self) -> None:
        running = [c for c in self.children if c.proc is not None and c.proc.poll() is None]
        if running:
            why = signal.Signals(self._signal).name if self._signal is not None else "shutdown"
            self.say(f"stopping {', '.join(c.spec.name for c in running)} ({why})")
        for child in running:
            assert child.proc is not None
            child.state = "stopping"
            self._reap_group(child.proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + self.backoff.stop_timeout
        while not self._force and time.monotonic() < deadline:
            if all(c.proc is None or c.proc.poll() is not None for c in running):
                break
            time.sleep(0.05)
        for child in self.children:
            proc = child.proc
            if proc is None:
                continue
            if proc.poll() is None:
                self.say(f"[yellow]{child.spec.name} did not stop in time: killing it[/]")
            self._reap_group(proc.pid)  # SIGKILL: the child if it lingers, and any process it left behind
            proc.wait()
            if child.reader is not None:
                child.reader.join(timeout=2)
            child.last_exit, child.proc = proc.returncode, None
            child.state = "stopped"

    def _forget_dead_supervisors(self) -> None:
        """Drop the entries that killed supervisors left behind, then publish ours."""
        if self.status is None:
            return
        try:
            for entry in self.status.read_all():
                if entry.pid != os.getpid() and self.is_dead(entry.identity):
                    self.status.withdraw(entry.pid)
        except OSError:
            pass
        self._publish()


# -- the child's side -----------------------------------------------------------------------------------


def _ask_for_death_signal(sig: int) -> bool:
    """Linux: have the kernel send ``sig`` to this process when its parent dies (``PR_SET_PDEATHSIG``)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(_PR_SET_PDEATHSIG, sig, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def follow_parent(grace: float = 10.0, poll: float = 1.0) -> None:
    """In a supervised child (``PAPERFEED_SUPERVISOR_PID`` set): end this process when the supervisor dies.

    SIGTERM first (from the kernel on Linux, else from the watch thread), so the child stops as it would
    on Ctrl+C; if it is still alive ``grace`` seconds later (a job mid-step), it exits at once. The
    variable is removed from the environment, so processes this child starts are not tied to it.
    """
    value = os.environ.pop(PARENT_ENV, "")
    if not value.isdigit():
        return
    parent = int(value)
    armed = _ask_for_death_signal(signal.SIGTERM)
    if os.getppid() != parent:  # it died before we could ask
        sys.stderr.write("the supervising paperfeed run is gone: not starting\n")
        raise SystemExit(1)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(poll)
        if not armed:
            os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(grace)
        os._exit(1)

    threading.Thread(target=watch, name="follow-parent", daemon=True).start()
