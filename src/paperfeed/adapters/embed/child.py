"""An embedder whose model lives in a child process that ends when it is idle (issue #39 item 6).

A long-lived background process (``paperfeed run``'s indexer and scheduler) embeds in bursts: an import,
the day's new papers. Kept in the process itself, the model stays in memory between bursts for good:
torch cannot be unloaded once imported (~600 MB measured after loading MiniLM, ~590 MB still after
freeing it), and ONNX Runtime keeps the arena its largest batch grew (~610 MB). Here the model is loaded
in a child process on the first call and the child is ended ``idle_seconds`` after the last one, so an idle
instance holds no model; the next burst pays the model's loading once more (seconds).

The child is started with ``spawn`` (a fork would copy the parent's threads and database connections),
ignores Ctrl-C and SIGTERM (the parent decides when work stops, and ends the child itself), exits when
its parent dies, and inherits the parent's priority (a niced indexer embeds niced). Every attribute of
the embedder is reached through the pipe: a method called here runs there with the same arguments and
returns its result (numpy arrays pickle), so the embedder's interface is the model's own, whatever it
grows; an exception raised there is raised here.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any

from paperfeed.domain.errors import EmbedderUnavailable

from ..child_call import serve_parent
from .factory import EmbedderConfig, EmbedderFactory, open_embedder

__all__ = ["ChildProcessEmbedder", "ChildProcessOpener"]

log = logging.getLogger(__name__)

_KIND = "?"  # a request asking whether an attribute is a method
_CPU = "cpu"  # a request for the child's CPU seconds so far


def _serve(config: EmbedderConfig, conn: Connection, parent: int) -> None:
    """The child: open the embedder, then answer ``(name, args, kwargs)`` requests until told to stop."""
    serve_parent(parent, ignore_term=True)  # the parent ends it: a group's SIGTERM is the parent's to act on
    embedder: Any = None
    failed: BaseException | None = None
    try:
        embedder = open_embedder(config)
    except Exception as exc:  # every request is answered with it: the parent raises the loader's words
        failed = exc
    while True:
        try:
            request = conn.recv()
        except (EOFError, OSError):
            return
        if request is None:
            return
        name, args, kwargs = request
        result: Any
        try:
            if failed is not None:
                raise failed
            if name == _KIND:  # is the attribute args[0] a method?
                result = callable(getattr(embedder, args[0]))
            elif name == _CPU:
                result = time.process_time()
            else:
                value = getattr(embedder, name)
                result = value(*args, **kwargs) if callable(value) else value
        except BaseException as exc:  # said to the parent, which raises it
            try:
                conn.send((False, exc))
            except Exception:  # an exception that does not pickle: its words
                conn.send((False, EmbedderUnavailable(f"{type(exc).__name__}: {exc}")))
            continue
        conn.send((True, result))


def _how_it_ended(process: BaseProcess | None, exc: BaseException) -> str:
    """Its exit code or signal, in words (SIGKILL is what the kernel's out-of-memory killer sends)."""
    if process is None:
        return str(exc) or type(exc).__name__
    process.join(timeout=1.0)  # the pipe closes as the child dies: its exit status follows at once
    code = process.exitcode
    if code is None:
        return str(exc) or type(exc).__name__
    if code < 0:
        name = signal.Signals(-code).name
        return f"killed by {name}; out of memory?" if -code == signal.SIGKILL else f"stopped by {name}"
    return f"exit code {code}"


class ChildProcessEmbedder:
    """:class:`~paperfeed.domain.search.Embedder` of ``config`` embedding in a child process, ended after
    ``idle_seconds`` without a call. ``model_id`` is answered here (it needs no model); everything else
    is the child's."""

    def __init__(
        self, config: EmbedderConfig, *, idle_seconds: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.config = config
        self.idle_seconds = idle_seconds
        self._clock = clock
        self._model_id = open_embedder(config).model_id  # the adapters build their models lazily
        self._lock = threading.RLock()
        self._process: BaseProcess | None = None
        self._conn: Connection | None = None
        self._last = clock()
        self._starts = 0
        self._watch: threading.Thread | None = None
        self._closed = threading.Event()

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dimension(self) -> int:
        return int(self._call("dimension"))

    def embed(self, texts: Sequence[str]) -> Any:
        return self._call("embed", list(texts))

    def embed_spans(
        self, texts: Sequence[str], spans: Sequence[Sequence[tuple[int, int]]], heads: Sequence[int]
    ) -> Any:
        """The model's late chunking (``SentenceEmbedder``: every embedder of ``adapters/embed`` pools the
        sentences of a text from its own forward pass), run in the child like ``embed``. Defined here, not
        reached through ``__getattr__``, because ``pools_sentences`` looks for it on the class."""
        return self._call("embed_spans", list(texts), [list(s) for s in spans], list(heads))

    def cpu_seconds(self) -> float:
        """CPU seconds the child process has used (``CpuMeasured``: calibration times the embedding where
        it runs, not in this process)."""
        return float(self._call(_CPU))

    def __getattr__(self, name: str) -> Any:
        """Any other attribute of the embedder: a method runs in the child; a value is read there."""
        if name.startswith("_"):
            raise AttributeError(name)
        if self._call(_KIND, name):
            return lambda *args, **kwargs: self._call(name, *args, **kwargs)
        return self._call(name)

    @property
    def running(self) -> bool:
        """A child process holds the model now."""
        process = self._process
        return process is not None and process.is_alive()

    @property
    def starts(self) -> int:
        """How many child processes were started (a new one after each idle release)."""
        return self._starts

    def _call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        with self._lock:
            conn = self._ensure()
            try:
                conn.send((name, args, kwargs))
                ok, value = conn.recv()
            except (EOFError, OSError) as exc:
                process = self._process
                self._end(kill=True)
                raise EmbedderUnavailable(
                    f"the embedding process ended while embedding ({_how_it_ended(process, exc)}). "
                    "Every batch committed so far is kept"
                ) from None
            except BaseException:  # interrupted mid-call (a stop): its answer would come to nobody
                self._end(kill=True)
                raise
            finally:
                self._last = self._clock()
        if not ok:
            raise value
        return value

    def _ensure(self) -> Connection:
        if self._conn is not None and self._process is not None and self._process.is_alive():
            return self._conn
        self._end()
        context = multiprocessing.get_context("spawn")
        ours, theirs = context.Pipe(duplex=True)
        process = context.Process(
            target=_serve, args=(self.config, theirs, os.getpid()), name="paperfeed-embedder", daemon=True
        )
        process.start()
        theirs.close()
        self._process, self._conn = process, ours
        self._starts += 1
        if self._watch is None and self.idle_seconds > 0:
            self._watch = threading.Thread(target=self._release_when_idle, name="embedder-idle", daemon=True)
            self._watch.start()
        return ours

    def _release_when_idle(self) -> None:
        while not self._closed.wait(min(1.0, self.idle_seconds)):
            if self._process is None or self._clock() - self._last < self.idle_seconds:
                continue
            with self._lock:  # not while a call is in flight
                if self._process is not None and self._clock() - self._last >= self.idle_seconds:
                    log.info("embedding model released after %.0f s idle", self.idle_seconds)
                    self._end()

    def release(self) -> None:
        """End the child now (the next call starts another)."""
        with self._lock:
            self._end()

    def _end(self, *, kill: bool = False) -> None:
        """End the child: asked to exit when it is idle, killed when ``kill`` (a call was cut short) or
        when it does not exit within seconds."""
        conn, process = self._conn, self._process
        self._conn = self._process = None
        if process is not None and kill and process.is_alive():
            process.kill()
        if conn is not None:
            with contextlib.suppress(OSError):
                conn.send(None)
            conn.close()
        if process is not None:
            process.join(timeout=5)
            if process.is_alive():
                process.kill()
                process.join(timeout=5)

    def close(self) -> None:
        self._closed.set()
        self.release()


class ChildProcessOpener:
    """:class:`~paperfeed.domain.embedding.EmbedderOpener` whose embedders embed in child processes
    (:class:`ChildProcessEmbedder`), each ended after ``idle_seconds`` without a call; :meth:`close` ends
    every one it made."""

    def __init__(self, factory: EmbedderFactory, idle_seconds: float) -> None:
        self.factory = factory
        self.idle_seconds = idle_seconds
        self._made: list[ChildProcessEmbedder] = []

    @property
    def config(self) -> EmbedderConfig:
        return self.factory.config

    def config_for(self, backend: str | None = None) -> EmbedderConfig:
        return self.factory.config_for(backend)

    def open(self, backend: str | None = None, *, queries: bool = False) -> ChildProcessEmbedder:
        config = self.factory.config_for(backend, queries=queries)
        made = ChildProcessEmbedder(config, idle_seconds=self.idle_seconds)
        self._made.append(made)
        return made

    def adopted_stamp(self) -> tuple[int, int] | None:
        return self.factory.adopted_stamp()

    def close(self) -> None:
        for made in self._made:
            made.close()
        self._made.clear()
