"""The library service on a real SQLite store: tags, saves, marks, notes, authors, alerts, privacy."""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from datetime import UTC, datetime

import pytest
from sqlalchemy import delete, func, select

from paperfeed.adapters.store.schema_accounts import users
from paperfeed.adapters.store.schema_library import library_notes, library_saves, library_tags
from paperfeed.bootstrap import App
from paperfeed.domain.ids import InvalidPaperId
from paperfeed.domain.library import MAX_NOTE_CHARS, InvalidLibraryInput
from paperfeed.domain.search import SearchFilters
from paperfeed.services.library import LibraryNotFound

from .conftest import add_user


def test_save_goes_to_the_default_tag_and_is_idempotent(app: App, ada: int) -> None:
    lib = app.readers.library
    state = lib.save(ada, "arXiv:2401.00001v2")
    assert (state.paper_id, state.tags, state.saved) == ("2401.00001", ("Saved",), True)
    first = lib.signals(ada).saved[0].saved_at
    time.sleep(0.01)
    lib.save(ada, "https://arxiv.org/abs/2401.00001")
    assert lib.signals(ada).saved[0].saved_at == first  # saving again changes nothing
    [tag] = lib.tags(ada)
    assert (tag.name, tag.count, tag.public) == ("Saved", 1, False)


def test_tags_are_per_reader_and_case_insensitive(app: App, ada: int, bob: int) -> None:
    lib = app.readers.library
    lib.save(ada, "2401.00001", ["Reading list", "GNN"])
    lib.save(ada, "2402.00002", ["reading  LIST"])
    assert [(t.name, t.count) for t in lib.tags(ada)] == [("Reading list", 2), ("GNN", 1)]
    assert lib.tags(bob) == []
    assert lib.state(ada, "2401.00001").tags == ("Reading list", "GNN")


def test_set_tags_replaces_the_papers_tags_and_empty_unsaves(app: App, ada: int) -> None:
    lib = app.readers.library
    lib.save(ada, "2401.00001", ["A", "B"])
    assert lib.set_tags(ada, "2401.00001", ["B", "C"]).tags == ("B", "C")
    assert lib.set_tags(ada, "2401.00001", []).saved is False
    assert [t.name for t in lib.tags(ada)] == ["A", "B", "C"]  # tags stay, empty


def test_unsave_from_one_tag_or_everywhere(app: App, ada: int, bob: int) -> None:
    lib = app.readers.library
    lib.save(ada, "2401.00001", ["A", "B"])
    a = next(t for t in lib.tags(ada) if t.name == "A")
    assert lib.unsave(ada, "2401.00001", a.id).tags == ("B",)
    with pytest.raises(LibraryNotFound):
        lib.unsave(bob, "2401.00001", a.id)  # not Bob's tag
    assert lib.state(ada, "2401.00001").tags == ("B",)
    assert lib.unsave(ada, "2401.00001").saved is False


def test_unknown_and_malformed_papers(app: App, ada: int) -> None:
    with pytest.raises(LibraryNotFound, match=r"2501\.12345"):
        app.readers.library.save(ada, "2501.12345")
    with pytest.raises(InvalidPaperId):
        app.readers.library.save(ada, "javascript:alert(1)")
    with pytest.raises(InvalidLibraryInput, match="tag"):
        app.readers.library.save(ada, "2401.00001", ["x" * 61])
    with pytest.raises(InvalidLibraryInput, match="tag"):
        app.readers.library.save(ada, "2401.00001", ["\u202e \x00 "])


def test_private_tags_are_invisible_to_others_public_ones_are_not(app: App, ada: int, bob: int) -> None:
    lib = app.readers.library
    lib.save(ada, "2401.00001", ["Secret"])
    secret = lib.tags(ada)[0]
    for attempt in (
        lambda: lib.tag(bob, secret.id),
        lambda: lib.library(bob, tag_id=secret.id),
        lambda: lib.collection(secret.id, bob),
        lambda: lib.collection(secret.id, None),
        lambda: lib.update_tag(bob, secret.id, public=True),
        lambda: lib.delete_tag(bob, secret.id),
    ):
        with pytest.raises(LibraryNotFound, match=f"{secret.id}"):
            attempt()
    assert [p.id for p, _ in lib.collection(secret.id, ada).papers] == ["2401.00001"]  # the owner sees it
    lib.update_tag(ada, secret.id, public=True)
    page = lib.collection(secret.id, None)
    assert (page.owner.display_name, [p.id for p, _ in page.papers]) == ("Ada", ["2401.00001"])
    with pytest.raises(LibraryNotFound):
        lib.library(bob, tag_id=secret.id)  # public does not make it Bob's to manage


def test_a_hidden_or_deleted_owner_takes_their_public_tags_along(app: App, ada: int) -> None:
    lib = app.readers.library
    tag = lib.create_tag(ada, "Shared", public=True)
    lib.save(ada, "2401.00001", ["Shared"])
    with app.core.store.engine.begin() as conn:
        conn.execute(users.update().where(users.c.id == ada).values(hidden_at=datetime.now(UTC)))
    with pytest.raises(LibraryNotFound):
        lib.collection(tag.id, None)
    with app.core.store.engine.begin() as conn:
        conn.execute(delete(users).where(users.c.id == ada))
        assert conn.execute(select(func.count()).select_from(library_saves)).scalar_one() == 0
        assert conn.execute(select(func.count()).select_from(library_tags)).scalar_one() == 0
    with pytest.raises(LibraryNotFound):
        lib.collection(tag.id, None)
    assert lib.signals(ada).saved == ()


def test_rename_publish_and_delete_tags(app: App, ada: int) -> None:
    lib = app.readers.library
    lib.save(ada, "2401.00001", ["One"])
    lib.save(ada, "2402.00002", ["Two"])
    one, two = lib.tags(ada)
    with pytest.raises(InvalidLibraryInput, match="already have a tag"):
        lib.update_tag(ada, two.id, name="ONE")
    renamed = lib.update_tag(ada, two.id, name="Deux", public=True)
    assert (renamed.name, renamed.public) == ("Deux", True)
    lib.delete_tag(ada, one.id)
    assert [t.name for t in lib.tags(ada)] == ["Deux"]
    assert lib.state(ada, "2401.00001").saved is False


def test_library_pages_filter_by_tag_and_read_state(app: App, ada: int) -> None:
    lib = app.readers.library
    for pid in ("2401.00001", "2402.00002", "2403.00003"):
        lib.save(ada, pid)
        time.sleep(0.002)
    lib.save(ada, "2403.00003", ["GNN"])
    lib.set_read(ada, "2402.00002")
    page = lib.library(ada)
    assert [e.paper.id for e in page.entries] == ["2403.00003", "2402.00002", "2401.00001"]
    assert page.total == 3
    assert [e.item.read for e in page.entries] == [False, True, False]
    assert [e.paper.id for e in lib.library(ada, read="unread").entries] == ["2403.00003", "2401.00001"]
    assert [e.paper.id for e in lib.library(ada, read="read").entries] == ["2402.00002"]
    gnn = next(t for t in lib.tags(ada) if t.name == "GNN")
    assert [e.paper.id for e in lib.library(ada, tag_id=gnn.id).entries] == ["2403.00003"]
    second = lib.library(ada, limit=2, offset=2)
    assert ([e.paper.id for e in second.entries], second.total) == (["2401.00001"], 3)


def test_read_and_not_interested_marks(app: App, ada: int) -> None:
    lib = app.readers.library
    assert lib.set_dismissed(ada, "2404.00004").dismissed is True
    assert lib.set_read(ada, "2404.00004").read is True
    papers, total = lib.dismissed(ada)
    assert ([p.id for p in papers], total) == (["2404.00004"], 1)
    state = lib.set_dismissed(ada, "2404.00004", False)
    assert (state.dismissed, state.read) == (False, True)
    assert lib.set_read(ada, "2404.00004", False).read is False
    assert lib.signals(ada).dismissed == frozenset()


def test_notes_are_private_markdown_sources(app: App, ada: int, bob: int) -> None:
    lib = app.readers.library
    state = lib.set_note(ada, "2401.00001", "  **Key idea**: <script>x</script>\r\nsecond line \x07 ")
    assert state.note is not None
    assert state.note.body == "**Key idea**: <script>x</script>\nsecond line"
    assert lib.state(bob, "2401.00001").note is None
    lib.set_note(ada, "2401.00001", "edited")
    assert lib.state(ada, "2401.00001").note.body == "edited"  # type: ignore[union-attr]
    lib.set_note(ada, "2401.00001", "   ")
    assert lib.state(ada, "2401.00001").note is None
    with app.core.store.engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(library_notes)).scalar_one() == 0
    with pytest.raises(InvalidLibraryInput, match="note"):
        lib.set_note(ada, "2401.00001", "x" * (MAX_NOTE_CHARS + 1))


def test_followed_authors_match_accents_and_case_but_not_other_names(app: App, ada: int) -> None:
    lib = app.readers.library
    assert lib.follow(ada, "José García") is True
    assert lib.follow(ada, "jose  GARCIA") is False  # the same person
    assert [a.name for a in lib.followed(ada)] == ["José García"]
    page = lib.author("Jose Garcia", ada)
    # newest first; "Joséphine Garcia" (2404.00004) is someone else
    assert ([p.id for p in page.papers], page.followed) == (["2403.00003", "2402.00002"], True)
    assert lib.author("Jose Garcia", None).followed is False
    assert lib.unfollow(ada, "JOSÉ garcía") is True
    assert lib.followed(ada) == []


def test_saved_searches_are_alerts_of_new_matches(app: App, ada: int, bob: int) -> None:
    lib = app.readers.library
    clock = [datetime(2024, 2, 15, tzinfo=UTC)]
    service = replace(lib, now=lambda: clock[0])
    saved = service.add_search(ada, "Diffusion", "diffusion", SearchFilters(categories=("cs.LG",)))
    with pytest.raises(InvalidLibraryInput, match="already have a saved search"):
        service.add_search(ada, "diffusion", "other")
    with pytest.raises(InvalidLibraryInput, match="query"):
        service.add_search(ada, "Empty", "   ")
    # never seen: everything published after the alert was created is new (created now, so nothing)
    assert service.alert(ada, saved.id).new == ()
    seen = service.mark_seen(ada, saved.id)
    assert seen.last_seen_at == clock[0]
    alert = service.alert(ada, saved.id)
    assert [p.id for p in alert.new] == ["2404.00004", "2403.00003"]  # after 15 Feb 2024, newest first
    assert "2402.00002" in [p.id for p in alert.earlier]
    token = service.feed_token(ada, saved.id)
    assert [p.id for p in service.alert_by_token(token).new] == ["2404.00004", "2403.00003"]
    for attempt in (
        lambda: service.alert(bob, saved.id),
        lambda: service.feed_token(bob, saved.id),
        lambda: service.mark_seen(bob, saved.id),
        lambda: service.delete_search(bob, saved.id),
        lambda: service.alert_by_token(token[:-1] + ("A" if token[-1] != "A" else "B")),
    ):
        with pytest.raises(LibraryNotFound):
            attempt()
    service.delete_search(ada, saved.id)
    assert service.searches(ada) == []


def test_signals_snapshot_for_recommendations(app: App, ada: int, bob: int) -> None:
    lib = app.readers.library
    lib.save(ada, "2401.00001", ["GNN"])
    time.sleep(0.002)
    lib.save(ada, "2402.00002")
    lib.save(ada, "2402.00002", ["GNN"])
    lib.set_dismissed(ada, "2404.00004")
    lib.set_read(ada, "2401.00001")
    lib.follow(ada, "Grace Hopper")
    lib.add_search(ada, "GNN alert", "graph networks", SearchFilters(has_code=True))
    lib.save(bob, "2403.00003")
    signals = lib.signals(ada)
    assert [(s.paper_id, s.tags) for s in signals.saved] == [
        ("2402.00002", ("GNN", "Saved")),
        ("2401.00001", ("GNN",)),
    ]
    assert signals.saved_ids == {"2401.00001", "2402.00002"}
    assert signals.in_tag("gnn") == ("2402.00002", "2401.00001")
    assert signals.dismissed == {"2404.00004"}
    assert signals.excluded_ids == {"2401.00001", "2402.00002", "2404.00004"}
    assert signals.read == {"2401.00001"}
    assert signals.followed_authors == ("Grace Hopper",)
    [search] = signals.saved_searches
    assert (search.name, search.query, search.filters.has_code) == ("GNN alert", "graph networks", True)
    assert lib.signals(bob).saved_ids == {"2403.00003"}


def test_hidden_papers_stay_saved_but_out_of_sight(app: App, ada: int) -> None:
    lib = app.readers.library
    lib.save(ada, "2401.00001", ["Public"])
    lib.save(ada, "2402.00002", ["Public"])
    public = lib.tags(ada)[0]
    lib.update_tag(ada, public.id, public=True)
    assert app.readers.accounts.hide_paper("2401.00001", reason="spam")  # the admins' moderation list
    page = lib.library(ada)
    assert ([e.paper.id for e in page.entries], page.hidden) == (["2402.00002"], 1)
    assert [p.id for p, _ in lib.collection(public.id).papers] == ["2402.00002"]
    assert "2401.00001" in lib.signals(ada).saved_ids  # still the reader's signal
    assert app.readers.accounts.unhide_paper("2401.00001")
    assert len(lib.library(ada).entries) == 2


def test_concurrent_saves_of_one_paper_make_one_row(app: App, ada: int) -> None:
    errors: list[BaseException] = []

    def click() -> None:
        try:
            app.readers.library.save(ada, "2401.00001", ["Race"])
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=click) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    with app.core.store.engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(library_saves)).scalar_one() == 1
        assert conn.execute(select(func.count()).select_from(library_tags)).scalar_one() == 1


def test_users_from_accounts_are_found_by_email(app: App) -> None:
    uid = add_user(app, "Carol@Example.org".lower(), "Carol")
    assert app.readers.library.user_id_for_email("  CAROL@example.org ") == uid
    assert app.readers.library.user_id_for_email("nobody@example.org") is None
