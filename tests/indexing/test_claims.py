"""Claims on the embedding backlog, on a real SQLite file and a real PostgreSQL database: disjoint batches
under concurrency, a commit fenced by its claim, expiry and dead holders, the ledger of commits."""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sqlalchemy import select

from paperfeed.adapters.embed.fake import FakeEmbedder
from paperfeed.adapters.store import SqlPaperStore
from paperfeed.adapters.store.claims import open_claims
from paperfeed.adapters.store.embeddings import SqlEmbeddingStore
from paperfeed.adapters.store.job_runs import SqlJobStore
from paperfeed.adapters.store.schema import embeddings
from paperfeed.adapters.vector.index import StoredVectorIndex
from paperfeed.domain.embedding import EmbeddedBatch, PendingPaper, vector_index_mark
from paperfeed.services.embed_claims import ClaimedBacklog
from paperfeed.services.indexing import IndexingService

from .conftest import add_papers, paper

MODEL = "fake-hash64"
T0 = datetime(2026, 1, 1, 12, tzinfo=UTC)
ELSEWHERE = "other-machine:4242:99:abcdef"  # a holder on another host: never seen as dead from here


def _vectors(batch: list[PendingPaper]) -> np.ndarray:
    return FakeEmbedder(64).embed([p.text for p in batch])


def _claim(
    store: SqlPaperStore, holder: str, *, limit: int, after: str = "", now: datetime = T0, batch: int = 1
) -> list[PendingPaper]:
    return open_claims(store.engine).claim(
        MODEL, holder, batch=batch, after=after, limit=limit, now=now, until=now + timedelta(seconds=120)
    )


def _stored(store: SqlPaperStore) -> set[str]:
    with store.engine.connect() as conn:
        return set(conn.execute(select(embeddings.c.paper_id)).scalars())


def test_claims_are_disjoint_and_a_commit_ends_them(store: SqlPaperStore) -> None:
    add_papers(store, [paper(i) for i in range(30)])
    claims = open_claims(store.engine)
    claims.start_worker("a:1:1:x", MODEL, T0)
    first = _claim(store, "a:1:1:x", limit=10)
    second = _claim(store, "b:2:2:y", limit=10)
    assert [p.paper_id for p in first] == [paper(i).id for i in range(10)]
    assert [p.paper_id for p in second] == [paper(i).id for i in range(10, 20)]  # the claimed are skipped
    assert [(h.holder, h.papers, h.first_id, h.last_id) for h in claims.holdings()] == [
        ("a:1:1:x", 10, paper(0).id, paper(9).id),
        ("b:2:2:y", 10, paper(10).id, paper(19).id),
    ]
    assert claims.commit(MODEL, "a:1:1:x", first, _vectors(first), T0) == [p.paper_id for p in first]
    assert _stored(store) == {p.paper_id for p in first}
    assert [h.holder for h in claims.holdings()] == ["b:2:2:y"]
    # a committed paper is no longer in the backlog: never claimed again, from the start or anywhere
    third = _claim(store, "c:3:3:z", limit=100)
    assert [p.paper_id for p in third] == [paper(i).id for i in range(20, 30)]
    assert _claim(store, "d:4:4:w", limit=100) == []
    (worker,) = claims.workers(T0 - timedelta(days=1))
    assert (worker.holder, worker.batches, worker.papers, worker.state) == ("a:1:1:x", 1, 10, "embedding")


def test_a_commit_writes_only_what_its_claim_still_holds(store: SqlPaperStore) -> None:
    """A worker paused past its expiry: its claim is swept and taken by another, which commits; the
    paused one's commit then writes nothing, so no vector is committed twice."""
    add_papers(store, [paper(i) for i in range(10)])
    claims = open_claims(store.engine)
    for holder in (ELSEWHERE, "here:1:1:x"):
        claims.start_worker(holder, MODEL, T0)
    paused = _claim(store, ELSEWHERE, limit=10)
    assert claims.sweep(T0 + timedelta(seconds=60)) == 0  # not expired yet: kept
    assert _claim(store, "here:1:1:x", limit=10, now=T0 + timedelta(seconds=60)) == []
    later = T0 + timedelta(seconds=121)
    assert claims.sweep(later) == 10  # expired: free
    taken = _claim(store, "here:1:1:x", limit=10, now=later)
    assert [p.paper_id for p in taken] == [p.paper_id for p in paused]
    assert len(claims.commit(MODEL, "here:1:1:x", taken, _vectors(taken), later)) == 10
    with store.engine.connect() as conn:
        before = dict(conn.execute(select(embeddings.c.paper_id, embeddings.c.created_at)).all())
    assert claims.commit(MODEL, ELSEWHERE, paused, _vectors(paused), later + timedelta(seconds=1)) == []
    with store.engine.connect() as conn:
        assert dict(conn.execute(select(embeddings.c.paper_id, embeddings.c.created_at)).all()) == before
    counts = {w.holder: (w.batches, w.papers) for w in claims.workers(T0)}
    assert counts == {ELSEWHERE: (0, 0), "here:1:1:x": (1, 10)}


def test_renewal_keeps_a_claim_past_its_first_expiry(store: SqlPaperStore) -> None:
    add_papers(store, [paper(i) for i in range(5)])
    claims = open_claims(store.engine)
    _claim(store, ELSEWHERE, limit=5)
    assert claims.renew(ELSEWHERE, T0 + timedelta(seconds=300), T0 + timedelta(seconds=100)) == 5
    assert claims.sweep(T0 + timedelta(seconds=200)) == 0
    assert claims.sweep(T0 + timedelta(seconds=301)) == 5


@pytest.mark.parametrize("threads", [6])
def test_concurrent_claimers_never_share_a_paper(store: SqlPaperStore, threads: int) -> None:
    """Six threads (own connections) claim batches of 7 at once until the backlog is empty: every paper
    claimed exactly once (PostgreSQL: SKIP LOCKED and the primary key; SQLite: its write lock)."""
    add_papers(store, [paper(i) for i in range(300)])
    claims = open_claims(store.engine)
    got: dict[str, list[str]] = {}
    start = threading.Barrier(threads)
    errors: list[BaseException] = []

    def claimer(n: int) -> None:
        holder = f"t{n}:{n}:{n}:x"
        mine: list[str] = []
        after, batch = "", 0
        try:
            start.wait()
            while True:
                batch += 1
                found = claims.claim(
                    MODEL,
                    holder,
                    batch=batch,
                    after=after,
                    limit=7,
                    now=T0,
                    until=T0 + timedelta(seconds=600),
                )
                if not found and after:
                    after = ""
                    continue
                if not found:
                    break
                mine += [p.paper_id for p in found]
                after = found[-1].paper_id
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)
        got[holder] = mine

    workers = [threading.Thread(target=claimer, args=(n,)) for n in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=120)
    assert not errors, errors
    every = [pid for ids in got.values() for pid in ids]
    assert len(every) == len(set(every)) == 300
    assert sum(1 for ids in got.values() if ids) >= 2  # they really shared the work


def test_a_dead_holder_on_this_host_is_freed_at_once_and_others_wait_for_live_ones(
    store: SqlPaperStore,
) -> None:
    add_papers(store, [paper(i) for i in range(12)])
    claims = open_claims(store.engine)
    jobs = SqlJobStore(store.engine)
    dead: set[str] = set()
    clock = [T0]
    naps: list[float] = []

    def sleep(seconds: float) -> None:
        naps.append(seconds)
        if len(naps) == 10:
            dead.add("gone:7:7:x")  # its process ends while we wait

    looks: list[str] = []

    class Counted:
        def __getattr__(self, name: str) -> object:
            return getattr(claims, name)

        def claim(self, model_id: str, holder: str, **kw: Any) -> list[PendingPaper]:
            looks.append(kw["after"])
            return claims.claim(model_id, holder, **kw)

    backlog = ClaimedBacklog(
        Counted(),  # type: ignore[arg-type]
        jobs,
        seconds=120,
        is_dead=lambda h: h in dead,
        clock=lambda: clock[0],
        sleep=sleep,
        holder="me:1:1:a",
    )
    held = _claim(store, "gone:7:7:x", limit=4)
    backlog.open(MODEL)
    first = backlog.take(MODEL, after="", limit=100)
    assert [p.paper_id for p in first] == [paper(i).id for i in range(4, 12)]
    backlog.commit(MODEL, first, _vectors(first))
    # only the other holder's live batch is left: take() waits (ten naps), then it is gone and freed
    looks.clear()
    again = backlog.take(MODEL, after=first[-1].paper_id, limit=100)
    assert len(naps) == 10
    assert [p.paper_id for p in again] == [p.paper_id for p in held]
    # past the cursor, from the start, then nothing while the other's claim stood still (a look from the
    # start scans every paper: not once per nap), then from where the freed batch began
    assert looks == [first[-1].paper_id, "", held[0].paper_id[:-1]]
    backlog.commit(MODEL, again, _vectors(again))
    assert backlog.take(MODEL, after="", limit=100) == []  # nothing left, nobody holds anything
    backlog.close("finished")
    assert _stored(store) == {paper(i).id for i in range(12)}
    assert claims.holdings() == []
    (me,) = [w for w in claims.workers(T0 - timedelta(days=1)) if w.holder == "me:1:1:a"]
    assert (me.state, me.batches, me.papers) == ("finished", 2, 12)


def test_an_expired_claim_of_another_machine_is_taken_after_its_expiry(store: SqlPaperStore) -> None:
    add_papers(store, [paper(i) for i in range(6)])
    claims = open_claims(store.engine)
    clock = [T0 + timedelta(seconds=10)]

    def sleep(seconds: float) -> None:
        clock[0] += timedelta(seconds=seconds)

    backlog = ClaimedBacklog(
        claims,
        SqlJobStore(store.engine),
        seconds=120,
        is_dead=lambda _h: False,
        clock=lambda: clock[0],
        sleep=sleep,
        holder="me:1:1:a",
    )
    _claim(store, ELSEWHERE, limit=6)  # claimed at T0 until T0 + 120 s, never renewed: its machine died
    taken = backlog.take(MODEL, after="", limit=100)
    assert len(taken) == 6
    assert clock[0] > T0 + timedelta(seconds=120)  # not before the expiry


def test_the_indexing_service_with_claims_embeds_everything_once(store: SqlPaperStore) -> None:
    """Two services (two holders) on one store, run one after the other in turns of a batch: the claims
    and the commit path of IndexingService itself, and the vector-index sync under its lease."""
    add_papers(store, [paper(i) for i in range(25)])
    claims = open_claims(store.engine)
    jobs = SqlJobStore(store.engine)
    seen: list[str] = []

    class Counting(FakeEmbedder):
        def embed(self, texts):  # type: ignore[no-untyped-def]
            seen.extend(texts)
            return super().embed(texts)

    service = IndexingService(
        SqlEmbeddingStore(store.engine),
        Counting(64),
        batch_size=4,
        claims=ClaimedBacklog(claims, jobs, seconds=120, is_dead=lambda _h: False, holder="one:1:1:a"),
    )
    summary = service.run()
    assert (summary.embedded, summary.remaining) == (25, 0)
    assert len(seen) == len(set(seen)) == 25
    (w,) = claims.workers(datetime.now(UTC) - timedelta(hours=1))
    assert (w.state, w.papers, w.batches) == ("finished", 25, 7)
    assert claims.holdings() == []


def test_a_vector_committed_late_by_another_writer_reaches_the_index_without_a_rebuild(
    store: SqlPaperStore, tmp_path: Path
) -> None:
    """With several writers a vector stamped just before a sync read the newest time can become visible
    after it: the next incremental sync takes it in (the overlap window) instead of missing it, and a
    folder index gains no dead rows for the vectors it already held."""
    from paperfeed.adapters.store.embeddings import write_vectors
    from paperfeed.adapters.vector.factory import open_vector_index

    def opener(*, model_id: str, dimension: int, fresh: bool) -> StoredVectorIndex:
        if fresh:
            shutil.rmtree(tmp_path / "vectors", ignore_errors=True)
        return open_vector_index(tmp_path / "vectors", kind="exact", model_id=model_id, dimension=dimension)

    add_papers(store, [paper(i) for i in range(8)])
    emb = SqlEmbeddingStore(store.engine)
    service = IndexingService(emb, FakeEmbedder(64), opener, batch_size=4)
    service.run(limit=6)
    mark = emb.get_mark(vector_index_mark(MODEL))
    assert mark is not None
    late = emb.backlog(MODEL, limit=2)
    with store.engine.begin() as conn:  # stamped 5 s before the mark, visible only now
        write_vectors(conn, MODEL, late, _vectors(late), mark - timedelta(seconds=5))
    index = opener(model_id=MODEL, dimension=64, fresh=False)
    assert len(index) == 6
    rows_before = index._store.n  # every row, dead ones included
    result = service.sync_index()
    assert (result.mode, result.size) == ("incremental", 8)
    index = opener(model_id=MODEL, dimension=64, fresh=False)
    assert {p.paper_id for p in late} <= set(index._store.row_of)
    # the late two, and the re-read batch stamped at the mark itself; nothing held was re-added
    assert index._store.n - rows_before <= 2 + 4


def test_a_batch_claimed_by_another_worker_during_my_look_is_waited_for(store: SqlPaperStore) -> None:
    """The race seen with three processes: worker B claims the last batch (the one freed from a dead worker)
    just before my claim runs; I must see B's claim and wait for it, not leave as if nothing were left
    (B might die too, and its batch would be stranded)."""
    add_papers(store, [paper(i) for i in range(6)])
    real = open_claims(store.engine)
    taken: list[list[PendingPaper]] = []

    class Interleaved:
        """The real claims; B's claim lands between my sweep and my claim, the first time."""

        def __getattr__(self, name: str) -> object:
            return getattr(real, name)

        def claim(self, model_id: str, holder: str, **kw: Any) -> list[PendingPaper]:
            if not taken:
                taken.append(_claim(store, "b:2:2:y", limit=100))
            return real.claim(model_id, holder, **kw)

    naps: list[float] = []

    def sleep(seconds: float) -> None:
        naps.append(seconds)
        real.commit(MODEL, "b:2:2:y", taken[0], _vectors(taken[0]), T0)  # B commits while I wait

    backlog = ClaimedBacklog(
        Interleaved(),  # type: ignore[arg-type]
        SqlJobStore(store.engine),
        seconds=120,
        is_dead=lambda _h: False,
        clock=lambda: T0,
        sleep=sleep,
        holder="me:1:1:a",
    )
    assert backlog.take(MODEL, after="", limit=100) == []
    assert len(naps) == 1  # waited for B's batch ...
    assert _stored(store) == {paper(i).id for i in range(6)}  # ... which B committed


class _ThreadWorkers:
    """An EmbedWorkers of threads (the fake embedder, slowed): ``--workers N``'s loop without processes."""

    def __init__(self, size: int, seen: list[str], lock: threading.Lock, meet: threading.Barrier) -> None:
        from concurrent.futures import ThreadPoolExecutor

        self._pool = ThreadPoolExecutor(size)
        self._size, self._seen, self._lock, self._meet = size, seen, lock, meet
        self._first = True

    @property
    def size(self) -> int:
        return self._size

    @property
    def threads(self) -> int:
        return 1

    @property
    def backend(self) -> str:
        return "fake"

    def submit(self, texts: Sequence[str]) -> Future[EmbeddedBatch]:
        first, self._first = self._first, False

        def embed() -> EmbeddedBatch:
            if first:  # each machine's first batch waits for the other's: both hold a claim at once
                self._meet.wait(timeout=60)
            time.sleep(0.02)
            with self._lock:
                self._seen.extend(texts)
            return EmbeddedBatch(FakeEmbedder(64).embed(list(texts)), MODEL, threading.get_ident(), 0.02, 0.0)

        return self._pool.submit(embed)

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


def test_two_runs_with_worker_pools_share_the_backlog_and_embed_each_paper_once(store: SqlPaperStore) -> None:
    """``paperfeed index --workers 2`` on two machines at once: two services (two holders), each handing
    claimed batches to its own pool, two batches per worker in flight."""
    add_papers(store, [paper(i) for i in range(120)])
    claims = open_claims(store.engine)
    jobs = SqlJobStore(store.engine)
    seen: list[str] = []
    lock = threading.Lock()
    meet = threading.Barrier(2)
    summaries = {}

    def machine(name: str) -> None:
        service = IndexingService(
            SqlEmbeddingStore(store.engine),
            FakeEmbedder(64),
            batch_size=5,
            claims=ClaimedBacklog(
                claims, jobs, seconds=120, is_dead=lambda _h: False, holder=f"{name}:1:1:a"
            ),
        )
        summaries[name] = service.run(workers=_ThreadWorkers(2, seen, lock, meet))

    threads = [threading.Thread(target=machine, args=(name,)) for name in ("gpu-a", "gpu-b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert sorted(summaries) == ["gpu-a", "gpu-b"]
    assert len(seen) == len(set(seen)) == 120  # nothing embedded twice
    assert sum(s.embedded for s in summaries.values()) == 120
    assert all(s.embedded > 0 for s in summaries.values())  # they shared it
    assert all(s.remaining == 0 for s in summaries.values())
    assert _stored(store) == {paper(i).id for i in range(120)}
    assert sum(w.papers for w in claims.workers(datetime.now(UTC) - timedelta(hours=1))) == 120


@pytest.mark.parametrize(("raised", "state"), [(KeyboardInterrupt, "stopped"), (RuntimeError, "failed")])
def test_a_run_that_ends_early_gives_its_claims_back_and_says_how(
    store: SqlPaperStore, raised: type[BaseException], state: str
) -> None:
    """Ctrl-C (or an embedder that fails) mid-run: the batch in flight is released at once for the other
    workers (not left to expire), and the ledger says stopped or failed."""
    add_papers(store, [paper(i) for i in range(12)])
    claims = open_claims(store.engine)

    class Breaks(FakeEmbedder):
        calls = 0

        def embed(self, texts: Sequence[str]) -> np.ndarray:
            Breaks.calls += 1
            if Breaks.calls == 2:
                assert [h.papers for h in claims.holdings()] == [4]  # the batch in flight is claimed
                raise raised("stop")
            return super().embed(texts)

    service = IndexingService(
        SqlEmbeddingStore(store.engine),
        Breaks(64),
        batch_size=4,
        claims=ClaimedBacklog(claims, SqlJobStore(store.engine), seconds=120, is_dead=lambda _h: False),
    )
    with pytest.raises(raised):
        service.run()
    assert claims.holdings() == []
    (w,) = claims.workers(datetime.now(UTC) - timedelta(hours=1))
    assert (w.state, w.papers) == (state, 4)
    assert len(_stored(store)) == 4


def test_papers_that_arrived_during_a_run_are_claimed_first(store: SqlPaperStore) -> None:
    """The indexer takes papers added or changed since its run began before its cursor's (issue #39); with
    claims that first look claims them too, and never waits for others."""
    add_papers(store, [paper(i) for i in range(10, 20)])
    began = datetime.now(UTC)
    add_papers(store, [paper(i) for i in range(3)])  # lower ids, arrived during the run
    claims = open_claims(store.engine)
    backlog = ClaimedBacklog(claims, SqlJobStore(store.engine), seconds=120, is_dead=lambda _h: False)
    recent = backlog.take(MODEL, after="", limit=100, wait=False, since=began)
    assert [p.paper_id for p in recent] == [paper(i).id for i in range(3)]
    assert backlog.take(MODEL, after="", limit=100, wait=True, since=began) == []  # none left, no wait
    rest = backlog.take(MODEL, after="", limit=100)
    assert [p.paper_id for p in rest] == [paper(i).id for i in range(10, 20)]
