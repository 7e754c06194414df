"""How an indexing process takes its batches when it may not be alone: claimed, renewed, committed only
while still its own (``domain/embedding_claims.py`` says what that guarantees under ``kill -9``).

:class:`ClaimedBacklog` is what :class:`~paperfeed.services.indexing.IndexingService` asks for its next
batch and through which it commits one. It claims from a cursor (each process moves forward through the
ids, so a claim never rescans what it passed), comes back to the start once the cursor runs out (papers
released or expired behind it), ends the claims of holders that are gone (on this host: their pid is
dead; elsewhere: their claims expired) and, when only other processes' batches are left, waits for them
to commit or expire, so a run that ends has left nothing behind that it could have done. A background
thread renews this process's claims every quarter of their lifetime, so a batch slower than the lease is
never taken away from a live worker.

It also serialises the syncs of a shared vector index (a lease), which two processes must never write at
once.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from paperfeed.domain.embedding import PendingPaper
from paperfeed.domain.embedding_claims import (
    BatchClaims,
    ClaimHolding,
    EmbeddingWorker,
    WorkerState,
)
from paperfeed.domain.job_runs import LeaseStore
from paperfeed.domain.wording import agree, count

if TYPE_CHECKING:
    from paperfeed.domain.embedding import Vectors

__all__ = ["SYNC_LEASE", "ClaimedBacklog"]

log = logging.getLogger("paperfeed.indexing")

SYNC_LEASE = "vector-index-sync"  # the job lease held while a process writes the shared vector index
SAY_EVERY_SECONDS = 30.0  # while waiting for other workers' batches, a line this often


class ClaimedBacklog:
    """``seconds``: a claim's lifetime (``PAPERFEED_EMBEDDING_CLAIM_SECONDS``); ``is_dead``: whether
    the process a holder names is gone (``services/jobs.holder_is_dead``); ``poll``: seconds between
    looks while waiting for others (default: a tenth of ``seconds``, at most 2)."""

    def __init__(
        self,
        claims: BatchClaims,
        leases: LeaseStore,
        *,
        seconds: float,
        is_dead: Callable[[str], bool],
        poll: float | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        sleep: Callable[[float], None] = time.sleep,
        holder: str | None = None,
    ) -> None:
        if seconds <= 0:
            raise ValueError("a claim must last more than 0 seconds")
        from paperfeed.services.jobs import process_identity

        self.claims = claims
        self.leases = leases
        self.seconds = seconds
        self.is_dead = is_dead
        self.poll = poll if poll is not None else min(2.0, seconds / 10)
        self.clock = clock
        self.sleep = sleep
        self.holder = holder or f"{process_identity()}:{secrets.token_hex(3)}"
        self._batch = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.lost = 0  # papers whose claim this process lost before it could commit them

    # -- a run --------------------------------------------------------------------------------------------

    def open(self, model_id: str) -> None:
        """Enter this process in the ledger and start renewing its claims."""
        self.claims.start_worker(self.holder, model_id, self.clock())
        if self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(target=self._renew, name="embedding-claims", daemon=True)
            self._thread.start()

    def close(self, state: WorkerState) -> None:
        """Stop renewing, give back the claims not committed (others take them at once) and say how the
        run ended. Errors are logged, never raised: the claims expire by themselves."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        try:
            self.claims.release(self.holder)
            self.claims.finish_worker(self.holder, state, self.clock())
        except Exception as exc:
            log.warning("could not give back this worker's claims (they expire by themselves): %s", exc)

    def _renew(self) -> None:
        while not self._stop.wait(self.seconds / 4):
            try:
                now = self.clock()
                self.claims.renew(self.holder, now + timedelta(seconds=self.seconds), now)
            except Exception as exc:  # a database hiccup: again at the next beat; on expiry they are lost
                log.warning("renewing this worker's claims failed: %s", exc)

    # -- batches ------------------------------------------------------------------------------------------

    def take(
        self,
        model_id: str,
        *,
        after: str,
        limit: int,
        wait: bool = True,
        stop: Callable[[], bool] | None = None,
        since: datetime | None = None,
    ) -> list[PendingPaper]:
        """This process's next batch: up to ``limit`` unclaimed backlog papers past ``after`` (``since``:
        only papers added or changed from then on, never waited for).

        Without ``wait`` that is all (one cheap look past the cursor: ``--workers N`` asks while its own
        batches are in flight). With ``wait`` it then looks from the start (papers released, expired or
        imported behind the cursor) and, when only other processes' batches are left, waits for them:
        each time one of them ends, it looks again from where that batch began, since a batch that was
        released rather than committed is free again. [] when nothing is left to claim and no other
        process holds a batch (or ``stop`` says so)."""
        now = self.clock()
        self._sweep(now)
        batch = self._claim(model_id, after, limit, now, since)
        if batch or not wait or since is not None:
            return batch
        if after:
            batch = self._claim(model_id, "", limit, now)
            if batch:
                return batch
        said = float("-inf")
        while True:
            # read after the claim failed, so a batch another worker claimed meanwhile is seen here
            others = self._others()
            if not others:  # none held: one more look from the start (one may have been freed meanwhile)
                return self._claim(model_id, "", limit, self.clock())
            if stop is not None and stop():
                return []
            if time.monotonic() - said >= SAY_EVERY_SECONDS:
                said = time.monotonic()
                held = sum(h.papers for h in others.values())
                log.warning(  # a warning, so a command's plain stderr shows why it has not ended yet
                    "nothing left to claim; waiting for the %s other workers are embedding (%s)",
                    count(held, "paper"),
                    "; ".join(_held(h) for h in others.values()),
                )
            self.sleep(self.poll)
            now = self.clock()
            self._sweep(now)
            left = {h.holder: h for h in self.claims.holdings()}
            ended = [h for h in others.values() if left.get(h.holder) != h]
            if ended:  # committed (nothing to take), or released, expired, freed: free again
                start = min(h.first_id for h in ended)
                batch = self._claim(model_id, start[:-1], limit, now)  # a proper prefix sorts first
                if batch:
                    return batch

    def _others(self) -> dict[str, ClaimHolding]:
        """Other processes' claims that have not expired, by holder."""
        now = self.clock()
        return {
            h.holder: h for h in self.claims.holdings() if h.holder != self.holder and h.expires_at >= now
        }

    def _claim(
        self, model_id: str, after: str, limit: int, now: datetime, since: datetime | None = None
    ) -> list[PendingPaper]:
        until = now + timedelta(seconds=self.seconds)
        batch = self.claims.claim(
            model_id,
            self.holder,
            batch=self._batch + 1,
            after=after,
            limit=limit,
            now=now,
            until=until,
            since=since,
        )
        if batch:
            self._batch += 1
        return batch

    def _sweep(self, now: datetime) -> list[ClaimHolding]:
        """End the claims of holders that are gone or expired; what was held before."""
        holdings = self.claims.holdings()
        dead = [h.holder for h in holdings if h.holder != self.holder and self.is_dead(h.holder)]
        if dead or any(h.expires_at < now for h in holdings):
            self.claims.sweep(now, dead)
            for h in holdings:
                if h.holder in dead:
                    log.warning(
                        "%s is no longer running: its %s %s free again",
                        _who(h),
                        count(h.papers, "claimed paper"),
                        agree(h.papers, "is", "are"),
                    )
                elif h.expires_at < now and h.holder != self.holder:
                    log.warning(
                        "the claims of %s expired (%s): they are free again",
                        _who(h),
                        count(h.papers, "paper"),
                    )
        return holdings

    def commit(
        self, model_id: str, batch: Sequence[PendingPaper], vectors: Vectors
    ) -> tuple[list[PendingPaper], Vectors]:
        """Store the batch's vectors and end its claims in one transaction; only papers still claimed by
        this process are written (the others' claims expired and another process took them)."""
        stored = set(self.claims.commit(model_id, self.holder, batch, vectors, self.clock()))
        if len(stored) == len(batch):
            return list(batch), vectors
        keep = [i for i, p in enumerate(batch) if p.paper_id in stored]
        self.lost += len(batch) - len(keep)
        log.warning(
            "%s of the batch's %s %s no longer claimed by this worker (its claim expired and another worker "
            "took them): their vectors are that worker's to store",
            f"{len(batch) - len(keep):,}",
            count(len(batch), "paper"),
            agree(len(batch) - len(keep), "was", "were"),
        )
        return [batch[i] for i in keep], vectors[keep]

    # -- the shared vector index --------------------------------------------------------------------------

    @contextlib.contextmanager
    def sync_turn(self, *, wait: bool) -> Iterator[bool]:
        """Hold the lease on writing the shared vector index: yields True when held, False when another
        process holds it and ``wait`` is False (a periodic sync is skipped; the next one catches up)."""
        from paperfeed.services.jobs import Lease, LeaseBusy

        lease = Lease(self.leases, SYNC_LEASE, seconds=max(self.seconds, 120.0))
        while True:
            try:
                lease.acquire()
                break
            except LeaseBusy:
                if not wait:
                    yield False
                    return
                self.sleep(self.poll)
        try:
            yield True
        finally:
            lease.release()

    # -- what is said about it ------------------------------------------------------------------------------

    def holdings(self) -> list[ClaimHolding]:
        return self.claims.holdings()

    def workers(self, *, within: timedelta = timedelta(hours=24)) -> list[EmbeddingWorker]:
        return self.claims.workers(self.clock() - within)


def _who(h: ClaimHolding) -> str:
    host, _, rest = h.holder.partition(":")
    return f"pid {rest.split(':', 1)[0]} on {host}"


def _held(h: ClaimHolding) -> str:
    papers = count(h.papers, "paper")
    return f"{_who(h)}: {papers}, {h.first_id}…{h.last_id}, claimed until {h.expires_at:%H:%M:%S} UTC"
