"""The community store on a real SQLite file and a real PostgreSQL database, with concurrent writers.

Threads released by a barrier write at the same instant through their own pooled connections: the counts
and caps must come out exact on both backends (the schema's keys and the insert-then-count transactions,
not luck, must make them so).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, date, datetime
from functools import partial
from typing import Any, TypeVar

import pytest
from sqlalchemy import Select, func, insert, select

from paperfeed.adapters.store import SqlPaperStore
from paperfeed.adapters.store.community import SUBMITTED_SOURCE, SqlCommunityStore
from paperfeed.adapters.store.schema import listings
from paperfeed.adapters.store.schema_accounts import hidden_papers, users
from paperfeed.adapters.store.schema_community import paper_comments, paper_submissions, paper_upvotes
from paperfeed.domain.community import LimitReached, PaperNotFound, Submission
from paperfeed.domain.ingest import Batch
from paperfeed.domain.models import Paper

T = TypeVar("T")
NOW = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
TODAY = NOW.date()
PAPER_IDS = [f"2603.{n:05d}" for n in range(1, 13)]


@pytest.fixture
def community(store: SqlPaperStore) -> SqlCommunityStore:
    papers = [Paper(id=pid, title=f"Paper {pid}", abstract="About things.", upvotes=10) for pid in PAPER_IDS]
    store.apply_batch(Batch(papers=papers))
    return SqlCommunityStore(store.engine)


def readers(community: SqlCommunityStore, count: int, *, hidden: bool = False, start: int = 0) -> list[int]:
    ids = []
    with community.engine.begin() as conn:
        for n in range(start, start + count):
            key = conn.execute(
                insert(users).values(
                    email=f"reader{n}@example.org", created_at=NOW, hidden_at=NOW if hidden else None
                )
            ).inserted_primary_key
            assert key is not None
            ids.append(int(key[0]))
    return ids


def at_once(calls: Sequence[Callable[[], T]]) -> list[T | BaseException]:
    """Run each of ``calls`` on its own thread, all released together; results (or exceptions) in order."""
    barrier = threading.Barrier(len(calls))

    def run(call: Callable[[], T]) -> T | BaseException:
        barrier.wait(timeout=30)
        try:
            return call()
        except BaseException as exc:
            return exc

    with ThreadPoolExecutor(len(calls)) as pool:
        return list(pool.map(run, calls))


def rows(community: SqlCommunityStore, query: Select[Any]) -> int:
    with community.engine.connect() as conn:
        return int(conn.execute(query).scalar_one())


def test_concurrent_double_clicks_count_each_reader_once(community: SqlCommunityStore) -> None:
    voters = readers(community, 24)
    paper = PAPER_IDS[0]
    # every reader clicks three times at once (double click, two tabs, a script)
    calls = [partial(community.add_vote, uid, paper, NOW) for uid in voters for _ in range(3)]
    results = at_once(calls)
    assert not [r for r in results if isinstance(r, BaseException)]
    assert sum(1 for r in results if r is True) == len(voters)  # exactly one click per reader counted
    assert community.vote_count(paper) == len(voters)
    assert rows(community, select(func.count()).select_from(paper_upvotes)) == len(voters)
    # half of them take their vote back, twice at once, while the others vote again
    leaving = voters[::2]
    calls = [partial(community.remove_vote, uid, paper) for uid in leaving for _ in range(2)]
    calls += [partial(community.add_vote, uid, paper, NOW) for uid in voters[1::2]]
    results = at_once(calls)
    assert not [r for r in results if isinstance(r, BaseException)]
    assert community.vote_count(paper) == len(voters) - len(leaving)
    assert community.voted_among(voters[0], [paper]) == set()
    assert community.voted_among(voters[1], [paper, PAPER_IDS[1]]) == {paper}


def test_votes_of_hidden_readers_are_neither_counted_nor_listed(community: SqlCommunityStore) -> None:
    shown = readers(community, 3)
    gone = readers(community, 2, hidden=True, start=10)
    for uid in shown + gone:
        assert community.add_vote(uid, PAPER_IDS[1], NOW)
    assert community.vote_count(PAPER_IDS[1]) == 3
    assert community.vote_counts([PAPER_IDS[1], PAPER_IDS[2]]) == {PAPER_IDS[1]: 3}
    voters, total = community.upvoters(PAPER_IDS[1], 10, 0)
    assert total == 3
    assert sorted(v.user_id for v in voters) == sorted(shown)
    assert all(v.name == f"reader #{v.user_id}" for v in voters)  # never a part of the email address


def test_a_vote_for_an_unknown_paper_is_refused(community: SqlCommunityStore) -> None:
    (uid,) = readers(community, 1)
    with pytest.raises(PaperNotFound):
        community.add_vote(uid, "2603.99999", NOW)
    assert community.paper_status("2603.99999") == ("missing", None)
    assert community.paper_status(PAPER_IDS[0]) == ("visible", 10)
    with community.engine.begin() as conn:
        conn.execute(insert(hidden_papers).values(paper_id=PAPER_IDS[0], hidden_at=NOW, reason="spam"))
    assert community.paper_status(PAPER_IDS[0]) == ("hidden", 10)


def test_the_daily_submission_cap_holds_under_concurrent_submissions(community: SqlCommunityStore) -> None:
    (uid,) = readers(community, 1)
    results = at_once([partial(community.add_submission, uid, pid, TODAY, NOW, 3) for pid in PAPER_IDS])
    made = [r for r in results if not isinstance(r, BaseException)]
    refused = [r for r in results if isinstance(r, LimitReached)]
    assert len(made) == 3, results
    assert len(refused) == len(PAPER_IDS) - 3, results
    assert community.submissions_on(uid, TODAY) == 3
    # each accepted submission has its listing on the day, the refused ones left nothing behind
    submitted = {s.paper_id for s in made if s is not None}
    with community.engine.connect() as conn:
        listed = set(
            conn.execute(
                select(listings.c.paper_id).where(
                    listings.c.source == SUBMITTED_SOURCE, listings.c.day == TODAY
                )
            ).scalars()
        )
    assert listed == submitted
    assert refused[0].retry_after == 12 * 3600  # until the next UTC midnight
    # another day starts afresh
    unused = next(pid for pid in PAPER_IDS if pid not in submitted)
    assert community.add_submission(uid, unused, date(2026, 3, 3), NOW, 3) is not None


def test_one_paper_is_submitted_once_even_by_readers_racing(community: SqlCommunityStore) -> None:
    racers = readers(community, 8)
    paper = PAPER_IDS[5]
    results = at_once([partial(community.add_submission, uid, paper, TODAY, NOW, 3) for uid in racers])
    assert not [r for r in results if isinstance(r, BaseException)], results
    winners = [r for r in results if isinstance(r, Submission)]
    assert results.count(None) == len(racers) - 1
    assert len(winners) == 1
    assert winners[0].paper_id == paper
    assert rows(community, select(func.count()).select_from(paper_submissions)) == 1
    found = community.submission(paper)
    assert found is not None
    assert found.user_id == winners[0].user_id
    assert found.day == TODAY
    assert (
        rows(community, select(func.count()).select_from(listings).where(listings.c.paper_id == paper)) == 1
    )


def test_the_hourly_comment_cap_holds_under_concurrent_posts(community: SqlCommunityStore) -> None:
    (uid,) = readers(community, 1)
    posts = [partial(community.add_comment, uid, PAPER_IDS[n % 3], f"comment {n}", NOW, 5) for n in range(12)]
    results = at_once(posts)
    assert sum(1 for r in results if not isinstance(r, BaseException)) == 5
    assert all(isinstance(r, LimitReached) for r in results if isinstance(r, BaseException))
    assert rows(community, select(func.count()).select_from(paper_comments)) == 5


def test_comments_are_listed_oldest_first_and_hidden_ones_only_for_admins(
    community: SqlCommunityStore,
) -> None:
    a, b = readers(community, 2)
    first = community.add_comment(a, PAPER_IDS[0], "first", NOW, 30)
    second = community.add_comment(b, PAPER_IDS[0], "second", datetime(2026, 3, 2, 13, tzinfo=UTC), 30)
    assert [c.body for c in community.comments(PAPER_IDS[0], include_hidden=False)] == ["first", "second"]
    assert community.set_comment_hidden(first.id, b, NOW)
    assert [c.id for c in community.comments(PAPER_IDS[0], include_hidden=False)] == [second.id]
    assert [c.id for c in community.comments(PAPER_IDS[0], include_hidden=True)] == [first.id, second.id]
    assert community.comment_counts(PAPER_IDS[:2]) == {PAPER_IDS[0]: 1}
    assert community.edit_comment(second.id, "second, edited", NOW)
    edited = community.comment(second.id)
    assert edited is not None
    assert edited.body == "second, edited"
    assert edited.edited_at == NOW
    assert community.delete_comment(second.id)
    assert community.comment(second.id) is None
