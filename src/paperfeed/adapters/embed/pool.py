"""``paperfeed index --workers N``: N embedding processes, each with its own model session.

One process with many threads leaves cores idle between a batch's tokenising and its matrix products, and
ONNX Runtime / torch scale poorly beyond a few threads on small models; several processes side by side,
each with ``cores // N`` threads, keep every core busy without oversubscribing them. The processes only
compute vectors: the parent stays the store's one writer.

Processes are started with ``spawn`` (a fork would copy the parent's thread pools and open database
connections). A worker ignores Ctrl-C (the parent decides when to stop, and stops it), and exits on its own
when its parent dies (a ``kill -9`` of ``paperfeed index`` leaves no orphan computing for nobody).
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import replace

from paperfeed.domain.embedding import MAX_WORKERS, EmbeddedBatch
from paperfeed.domain.errors import EmbedderUnavailable
from paperfeed.domain.search import Embedder

from .factory import EmbedderConfig, open_embedder

__all__ = ["MAX_WORKERS", "ProcessEmbedWorkers", "threads_per_worker"]

_PARENT_POLL_SECONDS = 1.0

# This worker process's embedder: one model session per process, built on its first batch (so a model
# that cannot load fails that batch's future with the loader's message, not the pool's start).
_embedder: Embedder | None = None
_config: EmbedderConfig | None = None


def threads_per_worker(total: int, workers: int) -> int:
    """Each worker's share of ``total`` threads (at least one): N workers never oversubscribe the cores."""
    return max(1, total // workers)


def _watch_parent(parent: int) -> None:
    while True:
        time.sleep(_PARENT_POLL_SECONDS)
        if os.getppid() != parent:  # re-parented: the index command is gone
            os._exit(1)


def _start(config: EmbedderConfig, parent: int) -> None:
    """Worker initialiser: keep the config, ignore Ctrl-C, die with the parent."""
    global _config
    _config = config
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True, name="parent-watch").start()


def _embed(texts: Sequence[str]) -> EmbeddedBatch:
    """Runs in a worker: embed one batch (loading the model first if this is the worker's first)."""
    global _embedder
    load = 0.0
    if _embedder is None:
        assert _config is not None
        t0 = time.perf_counter()
        embedder = open_embedder(_config)
        _ = embedder.dimension  # loads the model now, so its time is reported apart from embedding
        load = time.perf_counter() - t0
        _embedder = embedder
    t0 = time.perf_counter()
    vectors = _embedder.embed(texts)
    return EmbeddedBatch(vectors, _embedder.model_id, os.getpid(), time.perf_counter() - t0, load)


class ProcessEmbedWorkers:
    """An :class:`~paperfeed.domain.embedding.EmbedWorkers` of ``workers`` spawned processes."""

    def __init__(self, config: EmbedderConfig, workers: int, *, total_threads: int) -> None:
        """``total_threads``: the thread budget of all workers together (each gets its share)."""
        if not 1 <= workers <= MAX_WORKERS:
            raise ValueError(f"workers must be between 1 and {MAX_WORKERS}, not {workers}")
        self._size = workers
        self._backend = config.backend
        self._threads = threads_per_worker(total_threads, workers)
        self._executor = ProcessPoolExecutor(
            max_workers=workers,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_start,
            initargs=(replace(config, threads=self._threads), os.getpid()),
        )

    @property
    def size(self) -> int:
        return self._size

    @property
    def threads(self) -> int:
        return self._threads

    @property
    def backend(self) -> str:
        return self._backend

    def submit(self, texts: Sequence[str]) -> Future[EmbeddedBatch]:
        out: Future[EmbeddedBatch] = Future()
        try:
            work = self._executor.submit(_embed, list(texts))
        except BrokenProcessPool as exc:
            out.set_exception(_died(exc))
            return out

        def settle(done: Future[EmbeddedBatch]) -> None:
            if out.done():  # cancelled by close(): the caller no longer waits for it
                return
            if done.cancelled():
                out.cancel()
                return
            exc = done.exception()
            if exc is None:
                out.set_result(done.result())
            else:
                out.set_exception(_died(exc) if isinstance(exc, BrokenProcessPool) else exc)

        work.add_done_callback(settle)
        return out

    def close(self) -> None:
        """Cancel the queued batches and end the workers at once (a running batch is not waited for)."""
        processes = list((getattr(self._executor, "_processes", None) or {}).values())
        self._executor.shutdown(wait=False, cancel_futures=True)
        for process in processes:
            if process.is_alive():
                process.terminate()
        for process in processes:
            process.join(timeout=10)

    def __enter__(self) -> ProcessEmbedWorkers:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


def _died(exc: BaseException) -> EmbedderUnavailable:
    return EmbedderUnavailable(
        f"an embedding worker process died ({exc}); out of memory? try fewer --workers. Every batch "
        "committed so far is kept: run paperfeed index again to continue"
    )
