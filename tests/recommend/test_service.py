"""RecommendationService on a real store (SQLite and PostgreSQL), fake-embedder vectors and an exact index."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

import numpy as np
import pytest

from paperfeed.adapters.store.feed_queries import SqlFeedQueries
from paperfeed.domain.embedding import embedding_text
from paperfeed.services.feed import FeedService
from paperfeed.services.recommend import UnknownTag

from .conftest import EMBEDDER, NOW, World, saved_search, small_model, topic_of

GRAPHS_SAVED = [f"2606.{i:05d}" for i in (70, 72, 74, 76, 78, 0, 2, 4)]  # five old, three recent
PROTEINS_SAVED = [f"2606.{i:05d}" for i in (71, 73, 75, 77, 79, 1)]


def test_a_reader_of_graph_papers_gets_graph_papers(world: World) -> None:
    world.library.save(1, GRAPHS_SAVED)
    page = world.service(params=small_model()).feed(1, limit=10)
    assert page.mode == "model"
    assert page.message is None
    assert len(page.items) == 10
    assert [topic_of(r.paper.id) for r in page.items] == ["graphs"] * 10
    scores = [r.score for r in page.items]
    assert scores == sorted(scores, reverse=True)
    assert scores[-1] > 0  # better than an average recent paper


def test_every_model_pick_names_the_nearest_saved_paper(world: World) -> None:
    world.library.save(1, GRAPHS_SAVED)
    items = world.service(params=small_model()).for_you(1, limit=10)
    saved = [world.papers[p] for p in GRAPHS_SAVED]
    saved_vectors = EMBEDDER.embed([embedding_text(p.title, p.abstract) for p in saved])
    for rec in items:
        (reason,) = rec.reasons
        assert reason.kind == "similar"
        vector = EMBEDDER.embed([embedding_text(rec.paper.title, rec.paper.abstract)])[0]
        expected = saved[int(np.argmax(saved_vectors @ vector))]
        assert reason.paper_id == expected.id
        assert reason.text == f"similar to “{expected.title}” you saved"
        assert rec.reason == reason.text


def test_never_saved_dismissed_excluded_or_outside_the_window(world: World) -> None:
    world.library.save(1, GRAPHS_SAVED)
    world.library.dismissed[1] = {"2606.00006", "2606.00008"}
    shown_in_digest = frozenset({"2606.00010", "2606.00012"})
    items = world.service(params=small_model()).for_you(1, limit=200, exclude=shown_in_digest)
    ids = {r.paper.id for r in items}
    assert not ids & set(GRAPHS_SAVED)
    assert not ids & {"2606.00006", "2606.00008"}
    assert not ids & shown_in_digest
    first_day = (NOW - timedelta(days=29)).date()
    assert all(r.paper.published and r.paper.published.date() >= first_day for r in items)
    # every other recent paper is there, each once
    recent = {p for p, paper in world.papers.items() if int(p[5:]) < 70}
    assert ids == recent - set(GRAPHS_SAVED) - {"2606.00006", "2606.00008"} - shown_in_digest
    assert len(items) == len(ids)


def test_dismissing_a_paper_removes_it_at_once(world: World) -> None:
    world.library.save(1, GRAPHS_SAVED)
    service = world.service(params=small_model())
    top = service.for_you(1, limit=5)[0].paper.id
    world.library.dismissed[1] = {top}
    assert top not in {r.paper.id for r in service.for_you(1, limit=50)}
    world.library.save(1, ["2606.00020"])
    assert "2606.00020" not in {r.paper.id for r in service.for_you(1, limit=50)}


def test_no_saves_falls_back_to_trending(world: World) -> None:
    page = world.service(params=small_model()).feed(7, limit=5)
    assert page.mode == "trending"
    assert page.positives == 0
    assert page.message is not None
    assert "Save papers you like" in page.message
    assert [r.reason for r in page.items] == ["trending"] * 5
    trending = FeedService(SqlFeedQueries(world.store.engine), clock=lambda: NOW).trending(limit=5)
    assert [r.paper.id for r in page.items] == [t.paper.id for t in trending.items]


def test_saves_not_embedded_yet_are_said_so(world: World) -> None:
    world.embeddings.delete(["2606.00071", "2606.00073"])
    world.library.save(1, ["2606.00071", "2606.00073"])
    page = world.service(params=small_model()).feed(1, limit=5)
    assert page.mode == "trending"
    assert (page.positives, page.unindexed) == (0, 2)
    assert page.message is not None
    assert "The 2 papers you saved are not indexed yet" in page.message
    assert not {r.paper.id for r in page.items} & {"2606.00071", "2606.00073"}


def test_a_few_saves_rank_by_similarity_and_say_how_many_more(world: World) -> None:
    world.library.save(1, ["2606.00071", "2606.00073"])
    page = world.service(params=small_model(min_positives=5)).feed(1, limit=10)
    assert page.mode == "similarity"
    assert page.positives == 2
    assert page.message is not None
    assert "Save 3 more" in page.message
    assert [topic_of(r.paper.id) for r in page.items] == ["proteins"] * 10
    assert all(r.reasons[0].paper_id in {"2606.00071", "2606.00073"} for r in page.items)


def test_followed_authors_are_boosted_and_named(world: World) -> None:
    world.library.save(1, GRAPHS_SAVED)
    service = world.service(params=small_model())
    before = {r.paper.id: r for r in service.for_you(1, limit=200)}
    world.library.authors[1] = ("ada  LOVELACE",)  # matched as the library matches: case, spacing
    after = {r.paper.id: r for r in service.for_you(1, limit=200)}
    ada = "2606.00013"  # a proteins paper, far from the saves
    assert after[ada].score == pytest.approx(before[ada].score + service.settings.author_boost)
    assert list(after).index(ada) < list(before).index(ada)
    assert after[ada].reasons[0].kind == "author"
    assert after[ada].reasons[0].text == "by an author you follow: ada  LOVELACE"
    assert after[ada].reasons[1].kind == "similar"  # the model scored it too, and says against what
    assert all(r.reasons[0].kind == "similar" for p, r in after.items() if p != ada)


def test_followed_authors_alone_make_a_feed(world: World) -> None:
    world.library.authors[2] = ("Ada Lovelace",)
    page = world.service(params=small_model()).feed(2, limit=3)
    assert page.mode == "trending"
    assert page.items[0].paper.id == "2606.00013"
    assert page.items[0].reason == "by an author you follow: Ada Lovelace"
    assert [r.reason for r in page.items[1:]] == ["trending", "trending"]


def test_alert_matches_are_boosted_and_named(world: World) -> None:
    world.library.save(1, GRAPHS_SAVED)
    world.library.searches[1] = (saved_search("Folding news", "folding"),)
    window = (NOW.date() - timedelta(days=29), NOW.date())
    matched = [p.id for p in world.within(saved_search("x", "folding"), *window, 20)]
    assert 3 <= len(matched) < 20
    items = world.service(params=small_model(), alert_boost=10.0).for_you(1, limit=len(matched))
    assert {r.paper.id for r in items} == set(matched)  # proteins papers, lifted above every graph paper
    assert all(r.reasons[0].text == "matches your alert “Folding news”" for r in items)
    query, first, last = world.alert_calls[1]
    assert (query, first, last) == ("folding", NOW.date() - timedelta(days=29), NOW.date())


def test_per_tag_feeds_learn_from_that_tag_only(world: World) -> None:
    world.library.save(1, GRAPHS_SAVED, ("Graphs",))
    world.library.save(1, PROTEINS_SAVED, ("Proteins",))
    service = world.service(params=small_model())
    page = service.feed(1, limit=10, tag="proteins")  # tag names match case-insensitively
    assert page.tag == "Proteins"
    assert set(page.tags) == {"Graphs", "Proteins"}
    assert [topic_of(r.paper.id) for r in page.items] == ["proteins"] * 10
    everything = {r.paper.id for r in service.for_you(1, limit=200, tag="Graphs")}
    assert not everything & set(PROTEINS_SAVED)  # papers saved elsewhere stay excluded in a tag's feed
    with pytest.raises(UnknownTag, match="Nope"):
        service.feed(1, limit=10, tag="Nope")


def test_the_index_path_and_the_exact_path_agree(world: World) -> None:
    world.library.save(1, GRAPHS_SAVED)
    with_index = world.service(params=small_model()).for_you(1, limit=20)
    without = world.service(params=small_model(), with_index=False).for_you(1, limit=20)
    assert [r.paper.id for r in with_index] == [r.paper.id for r in without]
    assert [r.score for r in with_index] == pytest.approx([r.score for r in without])


@dataclass(frozen=True)
class _Upvotes:
    """The community's upvotes of each reader (:class:`~paperfeed.domain.recommend.Upvotes`)."""

    of: dict[int, list[str]]

    def upvoted_ids(self, user_id: int) -> list[str]:
        return self.of.get(user_id, [])


@dataclass(frozen=True)
class _Mailed:
    """What each reader's digests carried (:class:`~paperfeed.domain.recommend.MailedPapers`)."""

    of: dict[int, set[str]]

    def papers_mailed_to(self, user_id: int) -> set[str]:
        return self.of.get(user_id, set())


def test_upvoted_papers_count_as_positives_and_are_not_recommended(world: World) -> None:
    service = world.service(params=small_model())
    service.upvotes = _Upvotes({3: ["2606.00001", "2606.00003", "2606.00005", "2606.00007", "2606.00009"]})
    page = service.feed(3, limit=10)
    assert page.mode == "model"
    assert [topic_of(r.paper.id) for r in page.items] == ["proteins"] * 10
    assert not {r.paper.id for r in page.items} & {"2606.00001", "2606.00003"}
    assert page.items[0].reason.endswith("you upvoted")


def test_papers_already_sent_in_a_digest_are_not_recommended(world: World) -> None:
    world.library.save(1, GRAPHS_SAVED)
    service = world.service(params=small_model())
    first = [r.paper.id for r in service.for_you(1, limit=10)]
    service.mailed = _Mailed({1: set(first[:4])})
    again = [r.paper.id for r in service.for_you(1, limit=10)]
    assert not set(first[:4]) & set(again)
    assert again[:6] == first[4:]  # the rest keep their order


def test_the_model_is_cached_per_reader_and_signals(world: World) -> None:
    world.library.save(1, GRAPHS_SAVED)
    service = world.service(params=small_model())
    first = service.for_you(1, limit=10)
    assert len(service._models) == 1
    assert [r.paper.id for r in service.for_you(1, limit=10)] == [r.paper.id for r in first]
    assert len(service._models) == 1  # the same signals reuse the trained model
    world.library.save(1, ["2606.00006"])
    service.for_you(1, limit=10)
    assert len(service._models) == 2  # a new save trains a new one


def test_limit_is_checked(world: World) -> None:
    service = world.service()
    with pytest.raises(ValueError, match="limit"):
        service.for_you(1, limit=0)
    with pytest.raises(ValueError, match="limit"):
        service.for_you(1, limit=201)
