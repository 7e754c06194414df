"""What ``paperfeed jobs status`` and /admin/jobs say of the embedding workers (domain/embedding_claims)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from paperfeed.domain.embedding_claims import ClaimHolding, EmbeddingWorker, WorkerState, describe_workers

NOW = datetime(2026, 12, 1, 9, 30, tzinfo=UTC)


def _worker(holder: str, state: WorkerState, papers: int, batches: int, seen: float) -> EmbeddingWorker:
    return EmbeddingWorker(
        holder,
        "m",
        state,
        NOW - timedelta(seconds=100),
        NOW - timedelta(seconds=seen),
        batches,
        papers,
    )


def test_each_state_in_one_line_and_the_claims_held() -> None:
    workers = [
        _worker("a:1:1:x", "embedding", 400, 4, 2),
        _worker("b:2:2:y", "embedding", 1, 1, 300),
        _worker("here:3:3:z", "embedding", 0, 0, 5),
        _worker("c:4:4:w", "finished", 128, 1, 50),
    ]
    holdings = [
        ClaimHolding("a:1:1:x", 128, 1, "2501.00400", "2501.00527", NOW + timedelta(seconds=90)),
        ClaimHolding("b:2:2:y", 1, 1, "2501.00001", "2501.00001", NOW - timedelta(seconds=60)),
        ClaimHolding("here:3:3:z", 16, 1, "2501.00600", "2501.00615", NOW + timedelta(seconds=100)),
    ]
    lines = describe_workers(workers, holdings, NOW, lambda h: h.startswith("here:"))
    assert lines == [
        "embedding workers seen in the last 24 h: 4 (2 embedding now)",
        "  pid 1 on a: embedding with m since 09:28:20 UTC, 400 papers in 4 batches (4.08 papers/s); "
        "holds 128 papers (2501.00400 … 2501.00527), claimed until 09:31:30 UTC; last heard of 2 s ago",
        "  pid 2 on b: last heard of 5 min ago (its claims expired: others take them), 1 paper in 1 batch; "
        "holds 1 paper (2501.00001 … 2501.00001), its claim expired at 09:29:00 UTC",
        "  pid 3 on here: gone without finishing (its process ended), 0 papers in 0 batches; "
        "its 16 papers are free for the others",
        "  pid 4 on c: finished 2026-12-01 09:29:10 UTC, 128 papers in 1 batch (2.56 papers/s) with m",
    ]


def test_nothing_to_say_without_workers() -> None:
    assert describe_workers([], [], NOW, lambda _h: False) == []
