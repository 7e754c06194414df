"""BibTeX entries for works a reference list names, and bibliographies with unique keys."""

from __future__ import annotations

from datetime import UTC, datetime

from bibtexparser.entrypoint import parse_string

from paperfeed.domain.citation import bibliography, work_bibtex
from paperfeed.domain.models import Paper
from paperfeed.domain.paper_graph import WorkRef


def test_a_work_outside_the_store_is_a_misc_entry_from_what_the_source_said() -> None:
    w = WorkRef(
        key="doi:10.1093/mind/lix.236.433",
        title="Computing Machinery & {Intelligence",
        year=1950,
        doi="10.1093/mind/LIX.236.433",
    )
    text = work_bibtex(w)
    assert text.startswith("@misc{computing1950,")
    lib = parse_string(text)
    (entry,) = lib.entries
    assert entry["title"] == "{Computing Machinery \\& Intelligence}"  # unbalanced brace dropped
    assert entry["year"] == "1950"
    assert entry["doi"] == "10.1093/mind/LIX.236.433"
    assert entry["url"] == "https://doi.org/10.1093/mind/LIX.236.433"
    arxiv = work_bibtex(WorkRef(key="1706.03762", title="Attention Is All You Need", arxiv_id="1706.03762"))
    assert "eprint        = {1706.03762}" in arxiv
    assert "archivePrefix = {arXiv}" in arxiv
    assert work_bibtex(WorkRef(key="s2:" + "a" * 40)).startswith("@misc{s2aaaa")  # no title, no year


def test_bibliography_keys_are_unique_across_papers_and_references() -> None:
    paper = Paper(
        id="2401.00001",
        title="Attention maps",
        abstract="a",
        authors=("Ada Lovelace",),
        published=datetime(2024, 1, 2, tzinfo=UTC),
    )
    same_key = Paper(
        id="2401.00002",
        title="Attention maps again",
        abstract="a",
        authors=("Ada Lovelace",),
        published=datetime(2024, 3, 2, tzinfo=UTC),
    )
    refs = [
        WorkRef(key="doi:10.1/x", title="Deep nets", year=2017),
        WorkRef(key="doi:10.1/y", title="Deep nets", year=2017),
    ]
    entries = bibliography([paper, same_key, *refs])
    lib = parse_string("\n\n".join(entries))
    keys = [e.key for e in lib.entries]
    assert keys == ["lovelace2024attention", "lovelace2024attentiona", "deep2017", "deep2017a"]
    assert not lib.failed_blocks
