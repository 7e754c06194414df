"""The account store on both backends (a SQLite file, then a fresh PostgreSQL database)."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

from paperfeed.adapters.sources.jsonl_file import JsonlFileSource
from paperfeed.adapters.store import SqlPaperStore
from paperfeed.adapters.store.accounts import SqlAccountStore, hidden_paper_ids
from paperfeed.services.ingest import IngestService
from tests.support.defaults import DEFAULTS

from .conftest import PAPERS

NOW = datetime(2026, 1, 5, 12, 0, tzinfo=UTC)


def test_users_sessions_tokens(store: SqlPaperStore) -> None:
    accounts = SqlAccountStore(store.engine)
    ann = accounts.create_user("ann@example.org", "$argon2id$x", "Ann", NOW)
    assert ann is not None
    assert accounts.create_user("ann@example.org", None, None, NOW) is None  # unique address
    bob = accounts.create_user("bob@example.org", None, None, NOW)
    assert bob is not None

    accounts.add_session("s1", ann.id, NOW, NOW + timedelta(days=1))
    accounts.add_session("s2", ann.id, NOW, NOW + timedelta(days=1))
    found = accounts.session_user("s1", NOW)
    assert found is not None
    assert found[0].email == "ann@example.org"
    assert found[1] == NOW
    assert accounts.session_user("s1", NOW + timedelta(days=2)) is None  # expired
    assert accounts.delete_sessions(ann.id, keep="s2") == 1
    assert accounts.session_user("s1", NOW) is None
    assert accounts.session_user("s2", NOW) is not None

    token = accounts.add_token(ann.id, "ci", "h1", "pf_abc", NOW)
    assert accounts.token_user("h1", NOW) is not None
    assert not accounts.delete_token(bob.id, token.id)  # not bob's
    assert accounts.delete_token(ann.id, token.id)
    assert accounts.token_user("h1", NOW) is None

    accounts.set_hidden(ann.id, NOW)
    assert accounts.session_user("s2", NOW) is None  # hidden people have no live sessions
    listed = {u.user.email: u for u in accounts.list_users()}
    assert listed["ann@example.org"].hidden
    assert listed["ann@example.org"].sessions == 1
    assert listed["bob@example.org"].sessions == 0


def test_links_work_once_even_when_raced(store: SqlPaperStore) -> None:
    accounts = SqlAccountStore(store.engine)
    user = accounts.create_user("cy@example.org", None, None, NOW)
    assert user is not None
    accounts.add_link("L", user.id, "signin", NOW, NOW + timedelta(minutes=15))
    assert accounts.peek_link("L", "reset", NOW) is None  # another purpose
    assert accounts.peek_link("L", "signin", NOW + timedelta(minutes=16)) is None  # expired
    results: list[int | None] = []
    barrier = threading.Barrier(4)

    def use() -> None:
        barrier.wait()
        results.append(accounts.consume_link("L", "signin", NOW))

    threads = [threading.Thread(target=use) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results, key=str) == [user.id, None, None, None]


def test_rate_limit_log(store: SqlPaperStore) -> None:
    accounts = SqlAccountStore(store.engine)
    hits = [accounts.hit("b", NOW + timedelta(seconds=i), 60, 3) for i in range(3)]
    assert all(h.allowed for h in hits)
    refused = accounts.hit("b", NOW + timedelta(seconds=10), 60, 3)
    assert not refused.allowed
    assert refused.retry_after == 50  # the oldest (t=0) leaves at t=60
    assert accounts.hit("other", NOW, 60, 3).allowed  # buckets are separate
    first = hits[0].id
    assert first is not None
    accounts.unhit(first)
    assert accounts.hit("b", NOW + timedelta(seconds=11), 60, 3).allowed
    assert accounts.hit("b", NOW + timedelta(seconds=62), 60, 3).allowed  # t=1 and t=2 left the window
    accounts.purge(NOW + timedelta(days=2))
    with store.engine.connect() as conn:
        from sqlalchemy import func, select

        from paperfeed.adapters.store.schema_accounts import rate_limit_hits

        assert conn.execute(select(func.count()).select_from(rate_limit_hits)).scalar_one() == 0


def test_hidden_papers(store: SqlPaperStore) -> None:
    IngestService(store).run(JsonlFileSource(PAPERS, batch_size=DEFAULTS.batch_size))
    accounts = SqlAccountStore(store.engine)
    admin = accounts.create_user("mod@example.org", None, None, NOW)
    assert admin is not None
    assert accounts.paper_exists("2501.00101")
    assert not accounts.paper_exists("2501.99999")
    assert accounts.hide_paper("2501.00101", admin.id, "spam", NOW)
    assert not accounts.hide_paper("2501.00101", admin.id, "again", NOW)
    assert hidden_paper_ids(store.engine) == frozenset({"2501.00101"})
    assert [(h.paper_id, h.reason, h.hidden_by) for h in accounts.hidden_papers()] == [
        ("2501.00101", "spam", admin.id)
    ]
    assert accounts.unhide_paper("2501.00101")
    assert hidden_paper_ids(store.engine) == frozenset()
