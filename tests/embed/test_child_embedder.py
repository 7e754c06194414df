"""The embedder of a long-lived background process, in a child process ended when idle (issue #39 item 6).

`paperfeed run`'s indexer and scheduler held 850 MB and 920 MB idle: a model, once loaded in a process,
stays for good (torch cannot be unloaded). Their embedder now lives in a child process that ends a while
after its last call; these tests run real child processes (``spawn``) of the hashing embedder.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
from pathlib import Path

import numpy as np
import pytest

from paperfeed.adapters.embed import open_embedder
from paperfeed.adapters.embed.child import ChildProcessEmbedder, _how_it_ended
from paperfeed.domain.calibration import CpuMeasured
from paperfeed.domain.errors import EmbedderUnavailable
from paperfeed.domain.sentences import pools_sentences
from tests.support.defaults import embedder_config


def _wait_for(condition: object, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, "the condition never held"
        time.sleep(0.05)


def test_it_embeds_as_the_model_does_and_releases_the_model_when_idle(tmp_path: Path) -> None:
    config = embedder_config(tmp_path, backend="fake", model="demo", fake_dimension=16)
    inline = open_embedder(config)
    child = ChildProcessEmbedder(config, idle_seconds=0.5)
    try:
        texts = ["graph neural networks", "sparse attention for long documents"]
        assert child.model_id == inline.model_id
        assert not child.running  # nothing started before the first call
        assert np.array_equal(child.embed(texts), inline.embed(texts))
        assert child.dimension == 16
        assert child.running
        pid = child._process.pid if child._process is not None else None
        assert pid is not None
        assert pid != os.getpid()
        _wait_for(lambda: not child.running)  # idle: the child ends, and the model with it
        assert child.starts == 1
        assert np.array_equal(child.embed(texts[:1]), inline.embed(texts[:1]))  # the next call: a new one
        assert child.starts == 2
    finally:
        child.close()
    assert not child.running


def test_an_attribute_of_the_model_is_reached_in_the_child(tmp_path: Path) -> None:
    """Whatever the embedder offers beyond ``embed`` (pipeline work may add methods) runs there too."""
    config = embedder_config(tmp_path, backend="fake", model="demo", fake_dimension=8)
    child = ChildProcessEmbedder(config, idle_seconds=0)
    try:
        assert child.dimension == 8
        assert isinstance(child, CpuMeasured)  # calibration times the child's CPU, not this process's
        before = child.cpu_seconds()
        child.embed(["words"] * 200)
        assert child.cpu_seconds() >= before
        with pytest.raises(AttributeError):
            child.no_such_method  # noqa: B018 - raised there, raised here
        inline = open_embedder(config)
        as_seen: object = child  # as the sentence pass sees it
        assert pools_sentences(as_seen)  # it pools sentences through it (late chunking)
        texts, spans, heads = ["Title. One sentence. Another one."], [[(7, 20), (21, 33)]], [0]
        vectors, pooled = child.embed_spans(texts, spans, heads)
        expected, expected_pooled = inline.embed_spans(texts, spans, heads)  # type: ignore[attr-defined]
        assert np.array_equal(vectors, expected)
        assert all(np.array_equal(a, b) for a, b in zip(pooled, expected_pooled, strict=True))
    finally:
        child.close()


def test_a_model_that_cannot_load_says_why(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-model"
    config = embedder_config(tmp_path, backend="torch", model=str(missing))
    with pytest.raises(EmbedderUnavailable, match="no-such-model: no such model folder"):
        ChildProcessEmbedder(config, idle_seconds=0).embed(["a text"])


def test_a_child_that_died_is_replaced_by_the_next_call(tmp_path: Path) -> None:
    config = embedder_config(tmp_path, backend="fake", model="demo", fake_dimension=8)
    child = ChildProcessEmbedder(config, idle_seconds=0)
    try:
        child.embed(["warm"])
        assert child._process is not None
        child._process.kill()
        child._process.join()
        vectors = child.embed(["again"])  # a dead child is noticed before the call: a new one answers
        assert vectors.shape == (1, 8)
        assert child.starts == 2
    finally:
        child.close()


def _ignored_signals(pid: int) -> int:
    """The process's ignored-signal mask, from the kernel (bit n-1 is signal n)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigIgn:"):
            return int(line.split()[1], 16)
    raise AssertionError(f"no SigIgn line for pid {pid}")


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc (Linux)")
def test_a_stop_of_the_process_group_reaches_the_parent_not_the_embedding_child(tmp_path: Path) -> None:
    """``paperfeed run``'s stop is SIGTERM to each child's process group. The indexer's embedding child
    died of it mid-call, and the indexer, seeing its child vanish before its own stop watcher noted the
    signal, ended with "the embedding process ended while embedding … out of memory?" instead of a clean
    stop. The child ignores SIGTERM now, as it ignores Ctrl-C: the parent ends it (a message or a kill)."""
    config = embedder_config(tmp_path, backend="fake", model="demo", fake_dimension=8)
    child = ChildProcessEmbedder(config, idle_seconds=0)
    try:
        child.embed(["warm"])  # the child answers once it has set its signals up
        process = child._process
        assert process is not None
        assert process.pid is not None
        assert _ignored_signals(process.pid) & (1 << (signal.SIGTERM - 1)), "SIGTERM is not ignored"
        os.kill(process.pid, signal.SIGTERM)
        assert child.embed(["again"]).shape == (1, 8)  # the same child answers
        assert child.starts == 1
        assert process.is_alive()
    finally:
        child.close()
    assert not process.is_alive()  # and its parent still ends it


def test_a_child_that_ended_mid_call_is_named_by_how_it_ended() -> None:
    """The out-of-memory killer sends SIGKILL: only that death suggests memory; the others say what."""
    context = multiprocessing.get_context("spawn")
    said: dict[int, str] = {}
    for sig in (signal.SIGKILL, signal.SIGTERM):
        process = context.Process(target=time.sleep, args=(60,), daemon=True)
        process.start()
        assert process.pid is not None
        os.kill(process.pid, sig)
        said[sig] = _how_it_ended(process, EOFError())
    assert said[signal.SIGKILL] == "killed by SIGKILL; out of memory?"
    assert said[signal.SIGTERM] == "stopped by SIGTERM"
