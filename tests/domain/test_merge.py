from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paperfeed.domain.merge import merge_paper
from paperfeed.domain.models import Paper
from tests.support.papers import paper as make_paper

T0 = datetime(2024, 1, 1, tzinfo=UTC)


def paper(**kw: Any) -> Paper:
    return make_paper(
        kw.pop("id", "2401.00001"), kw.pop("title", "T"), abstract=kw.pop("abstract", "A"), **kw
    )


def test_newer_version_overwrites_older_never() -> None:
    v1 = paper(title="Old title", version=1, updated=T0)
    v2 = paper(title="New title", version=2, updated=T0 + timedelta(days=3))
    assert merge_paper(v1, v2).title == "New title"
    assert merge_paper(merge_paper(v1, v2), v1).title == "New title"
    assert merge_paper(v2, v1).title == "New title"


def test_unknown_fields_are_filled_but_none_never_erases() -> None:
    arxiv = paper(categories=("cs.CL", "cs.AI"), doi="10.1/x", version=2, updated=T0)
    hf = paper(upvotes=12, github_repo="https://github.com/a/b", version=None)
    merged = merge_paper(arxiv, hf)
    assert merged.categories == ("cs.CL", "cs.AI")
    assert merged.doi == "10.1/x"
    assert merged.upvotes == 12
    assert merged.github_repo == "https://github.com/a/b"


def test_counts_keep_the_maximum_and_published_the_earliest() -> None:
    a = paper(upvotes=30, github_stars=5, published=T0)
    b = paper(upvotes=10, github_stars=9, published=T0 - timedelta(days=1))
    merged = merge_paper(a, b)
    assert (merged.upvotes, merged.github_stars) == (30, 9)
    assert merged.published == T0 - timedelta(days=1)


def test_sources_keep_first_seen_time() -> None:
    a = paper(sources={"hf-daily": "2024-01-02T00:00:00Z"})
    b = paper(sources={"hf-daily": "2024-03-01T00:00:00Z", "arxiv-oai": "2024-02-01T00:00:00Z"})
    assert merge_paper(a, b).sources == {
        "hf-daily": "2024-01-02T00:00:00Z",
        "arxiv-oai": "2024-02-01T00:00:00Z",
    }


def test_a_second_file_adds_no_source_the_first_file_keeps_the_earliest_time() -> None:
    """The same paper from another file (renamed, uploaded again, the next dump): no second "file:" entry,
    so re-importing the same records under another name changes nothing (issue #40 item 3)."""
    a = paper(sources={"file:papers.jsonl": "2024-02-01T00:00:00Z"})
    again = paper(sources={"file:papers-copy.jsonl": "2024-03-01T00:00:00Z"})
    assert merge_paper(a, again) is a
    earlier = paper(sources={"file:old.jsonl": "2024-01-01T00:00:00Z", "hf-daily": "2024-01-05T00:00:00Z"})
    assert merge_paper(a, earlier).sources == {
        "file:papers.jsonl": "2024-01-01T00:00:00Z",
        "hf-daily": "2024-01-05T00:00:00Z",
    }


observations = st.builds(
    paper,
    title=st.sampled_from(["A", "B", "C"]),
    abstract=st.sampled_from(["", "x", "y"]),
    version=st.one_of(st.none(), st.integers(1, 4)),
    updated=st.one_of(st.none(), st.integers(0, 5).map(lambda d: T0 + timedelta(days=d))),
    published=st.one_of(st.none(), st.integers(0, 5).map(lambda d: T0 + timedelta(days=d))),
    upvotes=st.one_of(st.none(), st.integers(0, 50)),
    doi=st.one_of(st.none(), st.sampled_from(["d1", "d2"])),
    categories=st.sampled_from([(), ("cs.CL",), ("cs.LG", "cs.AI")]),
    sources=st.dictionaries(
        st.sampled_from(["s1", "s2", "file:a", "file:b"]), st.sampled_from(["2024-01-01", "2024-02-01"])
    ),
)
# Hypothesis' timing checks (deadline, too_slow) fire on a loaded 2-core machine (a generation measured
# 1.07 s beside other jobs): a timed assertion, which a property test does not need.
UNTIMED = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])


@UNTIMED
@given(observations, observations)
def test_merge_is_idempotent(a: Paper, b: Paper) -> None:
    once = merge_paper(a, b)
    assert merge_paper(once, b) == once


@UNTIMED
@given(st.lists(observations, min_size=1, max_size=6), st.data())
def test_replaying_any_seen_observation_changes_nothing(seq: list[Paper], data: st.DataObject) -> None:
    state: Paper | None = None
    for obs in seq:
        state = merge_paper(state, obs)
    assert state is not None
    again = data.draw(st.sampled_from(seq))
    assert merge_paper(state, again) == state


@given(observations, observations)
def test_fresher_content_wins_regardless_of_order(a: Paper, b: Paper) -> None:
    a = replace(a, version=1, updated=T0)
    b = replace(b, version=2, updated=T0 + timedelta(days=1))
    for merged in (merge_paper(a, b), merge_paper(b, a)):
        assert merged.title == b.title
        assert merged.version == 2
