"""The digest store's SQL on both backends (SQLite, and PostgreSQL when its test server is available)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from paperfeed.adapters.store import SqlPaperStore
from paperfeed.adapters.store.digests import SqlDigestStore
from paperfeed.adapters.store.job_runs import SqlJobStore
from paperfeed.domain.digest import (
    Digest,
    DigestEntry,
    DigestSection,
    DigestStatus,
    Preferences,
    Section,
    SubscriptionStatus,
)
from paperfeed.domain.digest_ledger import NewDigest
from paperfeed.domain.ingest import Batch
from paperfeed.domain.job_runs import StepReport
from paperfeed.domain.models import Paper

T = datetime(2025, 3, 20, 9, 0, tzinfo=UTC)


def test_ledger_rows_keys_claims_and_recovery(store: SqlPaperStore) -> None:
    store.apply_batch(Batch(papers=[Paper(id="2503.00001", title="A", published=T - timedelta(hours=3))]))
    ds = SqlDigestStore(store.engine)
    sub = ds.create_subscription(
        "A@Example.org", Preferences().checked(), status=SubscriptionStatus.active, user_id=None, now=T
    ).subscription
    assert sub.email == "a@example.org"
    again = ds.create_subscription(
        "a@example.org", Preferences().checked(), status=SubscriptionStatus.pending, user_id=None, now=T
    )
    assert again.subscription.id == sub.id  # one subscription per address
    digest = Digest((DigestSection(Section.trending, (DigestEntry("2503.00001", "why"),)),))
    item = NewDigest(sub.id, "2025-03-20", T, sub.email, digest)
    assert ds.add_digests([item], T) == 1
    assert ds.add_digests([item], T) == 0  # the (subscription, period) key
    assert ds.settled_periods([sub.id], ["2025-03-20", "2025-03-21"]) == {(sub.id, "2025-03-20")}
    assert ds.sent_papers([sub.id]) == {sub.id: {"2503.00001"}}
    assert ds.paper_times_in_window(T - timedelta(days=1), T) == [("2503.00001", T - timedelta(hours=3))]
    (entry,) = ds.due(T)
    assert entry.digest == digest
    assert ds.claim([entry.id], T) == {entry.id}
    assert ds.claim([entry.id], T) == set()
    assert ds.recover(T) == (1, 0)  # a dead sender's "sending" row: pending again
    assert ds.claim([entry.id], T) == {entry.id}
    assert ds.transition(entry.id, DigestStatus.sending, DigestStatus.handed, T)
    assert not ds.transition(entry.id, DigestStatus.sending, DigestStatus.handed, T)
    assert ds.recover(T) == (0, 1)  # a dead sender's "handed" row: never sent again
    stored = ds.entry(entry.id)
    assert stored is not None
    assert (stored.status, stored.attempts) == (DigestStatus.unconfirmed, 2)
    ds.add_bounce("A@example.org", "550 gone", T)
    ds.add_bounce("a@example.org", "550 again", T)
    assert ds.bounced(["a@example.org", "b@example.org"]) == {"a@example.org"}
    assert ds.ledger_counts() == {"unconfirmed": 1}
    assert ds.subscription_counts() == {"active": 1}


def test_sent_rows_are_marked_in_batches(store: SqlPaperStore) -> None:
    ds = SqlDigestStore(store.engine)
    ids = []
    for i in range(3):
        sub = ds.create_subscription(
            f"r{i}@example.org",
            Preferences().checked(),
            status=SubscriptionStatus.active,
            user_id=None,
            now=T,
        ).subscription
        ds.add_digests([NewDigest(sub.id, "2025-03-20", T, sub.email, Digest())], T)
        ids.append(sub.id)
    assert ds.ledger_counts() == {"empty": 3}
    assert ds.mark_sent([1, 2, 3], T) == 0  # only handed rows become sent


def test_leases_and_job_runs(store: SqlPaperStore) -> None:
    ds = SqlJobStore(store.engine)
    assert ds.try_lease("job:x", "h:1:1:a", T + timedelta(minutes=2), T)
    assert not ds.try_lease("job:x", "h:2:1:b", T + timedelta(minutes=2), T)
    assert ds.try_lease("job:x", "h:2:1:b", T + timedelta(minutes=2), T, take_from="h:1:1:a")
    assert ds.renew_lease("job:x", "h:2:1:b", T + timedelta(minutes=5))
    assert not ds.renew_lease("job:x", "h:1:1:a", T + timedelta(minutes=5))
    later = T + timedelta(minutes=6)
    assert ds.try_lease("job:x", "h:3:1:c", later + timedelta(minutes=2), later)  # expired
    ds.release_lease("job:x", "h:3:1:c")
    assert ds.lease("job:x") is None
    run = ds.start_run("daily", T, "scheduler", "h:9:1:z", T)
    ds.finish_run(run, "partial", [StepReport("index", "ok", {"embedded": 5}, None, 1.5)], "x: y", T)
    (found,) = ds.runs_for_slot("daily", T)
    assert (found.status, found.error, found.steps[0].counts) == ("partial", "x: y", {"embedded": 5})
    assert ds.interrupt_dead_runs(lambda holder: True, T) == 0  # finished runs are left alone
