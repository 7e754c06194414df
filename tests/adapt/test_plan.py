"""Planning a run: the pairs of each source are counted, and different pairs make a different run."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

from paperfeed.adapters.embed.adapted import ModelFolder
from paperfeed.domain.adaptation import AdaptOptions, CitationPairs, ModelTrainer, title_abstract_pairs
from paperfeed.domain.models import Paper
from paperfeed.services.adaptation import AdaptationService

from .conftest import StoredLinks

PAPERS = [Paper(id=f"2501.{i:05d}", title=f"Title {i}", abstract=f"Abstract {i}.") for i in range(60)]


def _service(tmp_path: Path, links: StoredLinks) -> AdaptationService:
    def pages() -> Iterator[list[Paper]]:
        yield PAPERS

    return AdaptationService(
        pages,
        cast(ModelTrainer, cast(Any, None)),  # planning never trains
        ModelFolder(tmp_path / "models"),
        base_spec="",
        base_name="all-MiniLM-L6-v2",
        pair_sources=(("title ↔ abstract", title_abstract_pairs), ("citing ↔ cited", CitationPairs(links))),
    )


def test_the_plan_counts_each_sources_pairs_and_new_edges_make_a_new_run(tmp_path: Path) -> None:
    links = StoredLinks([])
    service = _service(tmp_path, links)
    before = service.plan(AdaptOptions())
    train = [p.paper_id for p in before.split.train]
    assert before.pair_counts == {"title ↔ abstract": len(train), "citing ↔ cited": 0}
    assert service.plan(AdaptOptions()).key == before.key  # the same papers and pairs: the same run

    links.edges = [(train[0], train[1]), (train[2], train[1]), (train[0], before.split.held_out[0].paper_id)]
    after = service.plan(AdaptOptions())
    assert after.pair_counts == {"title ↔ abstract": len(train), "citing ↔ cited": 2}
    assert f"({len(train) + 2:,} pairs: {len(train)} title ↔ abstract, 2 citing ↔ cited)" in after.message()
    assert after.key != before.key, "a checkpoint trained on other pairs must not be resumed"
    assert after.run_dir != before.run_dir


def test_max_pairs_caps_the_pairs_keeping_each_sources_share_and_is_a_run_of_its_own(tmp_path: Path) -> None:
    full = _service(tmp_path, StoredLinks([]))
    train = [p.paper_id for p in full.plan(AdaptOptions()).split.train]
    links = StoredLinks([(train[i], train[i + 1]) for i in range(20)])
    service = _service(tmp_path, links)
    everything = service.plan(AdaptOptions())
    assert everything.pair_counts == {"title ↔ abstract": len(train), "citing ↔ cited": 20}
    capped = service.plan(AdaptOptions(max_pairs=34))
    share = round(34 * 20 / (len(train) + 20))
    assert capped.pair_counts == {"title ↔ abstract": 34 - share, "citing ↔ cited": share}
    assert len(capped.pairs) == 34
    assert set(capped.pairs) <= set(everything.pairs)
    assert capped.key != everything.key
    assert service.plan(AdaptOptions(max_pairs=34)).key == capped.key, "a capped run resumes"
