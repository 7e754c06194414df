"""Disjoint batches of the embedding backlog for several indexing processes: claims with an expiry.

Several ``paperfeed index`` processes, on one machine or on many against one PostgreSQL database, share
one backlog (papers without a vector of the current model for their current text). Each takes its next
batch by *claiming* it: one row per paper in the store, naming the holder and when the claim expires, made
in one transaction that skips papers another process is claiming at that moment (PostgreSQL:
``FOR NO KEY UPDATE SKIP LOCKED``; SQLite: the database's one write lock). A holder renews its claims
while it embeds; they end when its batch's vectors commit (in the same transaction, and only while the
claims are still its own), when it releases them, or when they expire.

What "nothing is embedded twice" means under ``kill -9`` of a worker, exactly:

* a batch whose vectors were committed is never embedded again: the commit and the end of its claims
  are one transaction, and a paper with a vector of the current model for its text is not in the
  backlog, so it can never be claimed again;
* every vector is committed once: a commit writes only papers whose claims are still the committer's
  (a worker that was paused past its expiry and lost them to another writes nothing for them);
* what the killed worker had claimed and not committed (its batch in flight: one for ``paperfeed index``,
  up to two per embedding process for ``--workers N``) is embedded a second time, once, by whoever claims
  it after the claims end: at once on the same host (the holder's pid is gone), after the expiry
  (``PAPERFEED_EMBEDDING_CLAIM_SECONDS``) from another machine. Nothing else is redone, nothing is lost.

A paper whose text changes while it is claimed gets the vector of the text that was claimed and is then
in the backlog again (its hash differs), as without claims.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Literal, Protocol

from .embedding import PendingPaper

if TYPE_CHECKING:
    from .embedding import Vectors

__all__ = ["BatchClaims", "ClaimHolding", "EmbeddingWorker", "WorkerState", "describe_workers"]

WorkerState = Literal["embedding", "finished", "stopped", "failed"]


@dataclass(frozen=True, slots=True)
class ClaimHolding:
    """The claims one holder has now: how many papers, their id range, when the newest expires."""

    holder: str  # host:pid:start:random (services/jobs.process_identity plus a token)
    papers: int
    batches: int
    first_id: str
    last_id: str
    expires_at: datetime


@dataclass(frozen=True, slots=True)
class EmbeddingWorker:
    """What one indexing process did, as the store's ledger counts it: its committed batches and papers
    (counted in the transaction that commits them) and when it was last heard of."""

    holder: str
    model_id: str
    state: WorkerState  # embedding; finished (the backlog was done); stopped (a limit or Ctrl-C); failed
    started_at: datetime
    seen_at: datetime  # its newest commit or claim renewal
    batches: int
    papers: int


class BatchClaims(Protocol):
    """Claims on the embedding backlog and the ledger of the processes that hold them (the SQL store)."""

    def claim(
        self,
        model_id: str,
        holder: str,
        *,
        batch: int,
        after: str,
        limit: int,
        now: datetime,
        until: datetime,
        since: datetime | None = None,
    ) -> list[PendingPaper]:
        """Claim up to ``limit`` backlog papers with id greater than ``after`` that nobody claims, in id
        order, until ``until``, as ``holder``'s batch number ``batch``; ``since``: only papers added or
        changed from then on. [] when there are none (claims of others are never taken over here:
        :meth:`sweep` ends them first)."""
        ...

    def commit(
        self, model_id: str, holder: str, papers: Sequence[PendingPaper], vectors: Vectors, now: datetime
    ) -> list[str]:
        """In one transaction: end ``holder``'s claims on ``papers``, store the vectors of those it still
        held and count them in its ledger row. Returns the ids whose vectors were stored."""
        ...

    def renew(self, holder: str, until: datetime, now: datetime) -> int:
        """Extend every claim of ``holder`` to ``until`` and note it was seen; how many claims it has."""
        ...

    def release(self, holder: str) -> int:
        """End every claim of ``holder`` (its batches in flight were dropped): others may take them."""
        ...

    def sweep(self, now: datetime, dead: Sequence[str] = ()) -> int:
        """End the claims that expired before ``now`` and those of the ``dead`` holders."""
        ...

    def holdings(self) -> list[ClaimHolding]:
        """Every holder's claims, expired ones included (until a sweep ends them)."""
        ...

    def start_worker(self, holder: str, model_id: str, now: datetime) -> None:
        """Add (or restart) ``holder``'s ledger row; rows of workers not seen for long are forgotten."""
        ...

    def finish_worker(self, holder: str, state: WorkerState, now: datetime) -> None: ...

    def workers(self, since: datetime) -> list[EmbeddingWorker]:
        """Ledger rows of the workers seen at or after ``since``, the most recently seen first."""
        ...


def _who(holder: str) -> str:
    host, _, rest = holder.partition(":")
    pid = rest.split(":", 1)[0]
    return f"pid {pid} on {host}" if pid else holder


def _papers(n: int) -> str:
    return f"{n:,} paper" + ("" if n == 1 else "s")


def _batches(n: int) -> str:
    return f"{n:,} batch" + ("" if n == 1 else "es")


def _ago(seconds: float) -> str:
    seconds = max(0, int(seconds))
    if seconds < 90:
        return f"{seconds} s ago"
    if seconds < 90 * 60:
        return f"{seconds // 60} min ago"
    return f"{seconds // 3600} h ago"


def describe_workers(
    workers: Sequence[EmbeddingWorker],
    holdings: Sequence[ClaimHolding],
    now: datetime,
    is_dead: Callable[[str], bool],
) -> list[str]:
    """Lines for ``paperfeed jobs status``: each indexing process seen lately, what it committed (the
    ledger's counts), what it holds now and until when, and whether it is still there."""
    held = {h.holder: h for h in holdings}
    lines: list[str] = []
    for w in workers:
        done = f"{_papers(w.papers)} in {_batches(w.batches)}"
        seconds = (w.seen_at - w.started_at).total_seconds()
        if w.papers and seconds > 0:
            done += f" ({w.papers / seconds:,.2f} papers/s)"
        h = held.pop(w.holder, None)
        claim = ""
        if h is not None:
            until = "its claim expired at" if h.expires_at < now else "claimed until"
            held_ids = f"{h.first_id} … {h.last_id}"
            claim = f"; holds {_papers(h.papers)} ({held_ids}), {until} {h.expires_at:%H:%M:%S} UTC"
        who = _who(w.holder)
        if w.state != "embedding":
            lines.append(f"  {who}: {w.state} {w.seen_at:%Y-%m-%d %H:%M:%S} UTC, {done} with {w.model_id}")
        elif is_dead(w.holder):
            free = f"; its {_papers(h.papers)} are free for the others" if h is not None else ""
            lines.append(f"  {who}: gone without finishing (its process ended), {done}{free}")
        elif h is not None and h.expires_at < now:
            silent = _ago((now - w.seen_at).total_seconds())
            lines.append(
                f"  {who}: last heard of {silent} (its claims expired: others take them), {done}{claim}"
            )
        else:
            lines.append(
                f"  {who}: embedding with {w.model_id} since {w.started_at:%H:%M:%S} UTC, {done}{claim}; "
                f"last heard of {_ago((now - w.seen_at).total_seconds())}"
            )
    for h in held.values():  # claims of a process whose ledger row is gone
        lines.append(
            f"  {_who(h.holder)}: holds {_papers(h.papers)} ({h.first_id} … {h.last_id}) until "
            f"{h.expires_at:%H:%M:%S} UTC"
        )
    if not lines:
        return []
    live = sum(1 for w in workers if w.state == "embedding" and not is_dead(w.holder))
    head = f"embedding workers seen in the last 24 h: {len(workers)} ({live} embedding now)"
    return [head, *lines]
