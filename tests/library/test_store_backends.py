"""The library store's SQL on both backends: SQLite and a real PostgreSQL (each test runs on both)."""

from __future__ import annotations

import threading
from datetime import UTC, date, datetime

from sqlalchemy import delete, func, insert, select

from paperfeed.adapters.store import SqlPaperStore
from paperfeed.adapters.store.library import SqlLibraryStore
from paperfeed.adapters.store.schema_accounts import hidden_papers, users
from paperfeed.adapters.store.schema_library import library_saves
from paperfeed.domain.ingest import Batch
from paperfeed.domain.search import SearchFilters

from .conftest import PAPERS


def _user(store: SqlPaperStore, email: str) -> int:
    with store.engine.begin() as conn:
        key = conn.execute(
            insert(users).values(email=email, display_name=email[:3], created_at=datetime.now(UTC))
        ).inserted_primary_key
    assert key is not None
    return int(key[0])


def test_library_store_on_each_backend(store: SqlPaperStore) -> None:
    store.apply_batch(Batch(papers=list(PAPERS)))
    lib = SqlLibraryStore(store.engine)
    ada, bob = _user(store, "ada@example.org"), _user(store, "bob@example.org")
    assert lib.user_id_for_email("ADA@example.org ") == ada

    assert lib.save(ada, ["2401.00001", "2402.00002"], ["Saved", "GNN"]) == 4
    assert lib.save(ada, ["2401.00001"], ["saved"]) == 0  # same tag by key, same paper: nothing new
    lib.set_paper_tags(ada, "2402.00002", ["GNN", "New"])
    assert lib.paper_tags(ada, ["2401.00001", "2402.00002"]) == {
        "2401.00001": ("Saved", "GNN"),
        "2402.00002": ("GNN", "New"),
    }
    tags = {t.name: t for t in lib.tags(ada)}
    assert {n: t.count for n, t in tags.items()} == {"Saved": 1, "GNN": 2, "New": 1}
    assert lib.update_tag(tags["New"].id, name="gnn") is False  # clashes with GNN
    assert lib.update_tag(tags["New"].id, name="Fresh", public=True) is True

    lib.set_read(ada, "2402.00002", True)
    lib.set_dismissed(ada, "2404.00004", True)
    items, total = lib.items(ada, read="unread")
    assert ([i.paper_id for i in items], total) == (["2401.00001"], 1)
    items, total = lib.items(ada, tag_id=tags["GNN"].id, read="read")
    assert ([i.paper_id for i in items], total) == (["2402.00002"], 1)
    assert lib.marks(ada, ["2402.00002", "2404.00004"]) == {
        "2402.00002": (True, False),
        "2404.00004": (False, True),
    }
    lib.set_read(ada, "2402.00002", False)
    assert lib.marks(ada, ["2402.00002"]) == {}

    lib.set_note(ada, "2401.00001", "first")
    lib.set_note(ada, "2401.00001", "second")
    note = lib.note(ada, "2401.00001")
    assert note is not None
    assert note.body == "second"
    assert lib.follow(ada, "José García") is True
    assert lib.follow(ada, "jose garcia") is False
    saved = lib.add_search(ada, "Alert", "diffusion", SearchFilters(date(2024, 1, 1), None, ("cs.LG",), True))
    assert saved is not None
    assert lib.add_search(ada, "alert", "other", SearchFilters()) is None
    assert lib.search_by_token(lib.search_feed_token(saved.id) or "") == saved
    assert saved.filters == SearchFilters(date(2024, 1, 1), None, ("cs.LG",), True)

    with store.engine.begin() as conn:
        conn.execute(insert(hidden_papers).values(paper_id="2402.00002", hidden_at=datetime.now(UTC)))
    assert lib.hidden_among(["2401.00001", "2402.00002"]) == {"2402.00002"}

    signals = lib.signals(ada)
    assert signals.saved_ids == {"2401.00001", "2402.00002"}
    assert (signals.dismissed, signals.followed_authors) == (frozenset({"2404.00004"}), ("José García",))
    assert lib.signals(bob).saved == ()

    # racing saves of one paper by one reader end in one row on either backend
    threads = [threading.Thread(target=lib.save, args=(bob, ["2403.00003"], ["Race"])) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    with store.engine.connect() as conn:
        count = select(func.count()).select_from(library_saves).where(library_saves.c.user_id == bob)
        assert conn.execute(count).scalar_one() == 1

    with store.engine.begin() as conn:  # a deleted reader takes their library along
        conn.execute(delete(users).where(users.c.id == ada))
    assert lib.tags(ada) == []
    assert lib.signals(ada).saved == ()
