"""BibTeX entries as papers (the upload's BibTeX source), read by the real parser from real files."""

from __future__ import annotations

from pathlib import Path

import pytest

from paperfeed.adapters.sources.bibtex_papers import BibtexPaperSource, split_authors
from paperfeed.domain.library import MAX_FILE_BYTES
from paperfeed.domain.models import Paper


@pytest.mark.parametrize(
    ("field", "names"),
    [
        ("Lovelace, Ada and Charles Babbage", ["Ada Lovelace", "Charles Babbage"]),
        ("{Barnes and Noble} and Smith, J.", ["{Barnes and Noble}", "J. Smith"]),
        ("King, Jr, Martin Luther AND others", ["Martin Luther King Jr"]),
        ("", []),
    ],
)
def test_author_lists(field: str, names: list[str]) -> None:
    assert split_authors(field) == names


def _read(tmp_path: Path, text: str | bytes) -> tuple[list[Paper], list[str]]:
    path = tmp_path / "refs.bib"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    papers: list[Paper] = []
    rejects: list[str] = []
    for batch in BibtexPaperSource(path, label="refs.bib", batch_size=2).batches():
        papers.extend(batch.papers)
        rejects.extend(str(r) for r in batch.rejects)
    return papers, rejects


def test_every_entry_is_a_paper_or_a_reject_with_its_line(tmp_path: Path) -> None:
    text = """@misc{good1, title={First}, eprint={2401.00001v2}, archivePrefix={arXiv}, date={2024-01-03}}
@misc{good1, title={Duplicate key}, eprint={2401.00002}}
@misc{notitle, eprint={2401.00003}}
@misc{broken, title={never closed, eprint={2401.00004}
@misc{doi, title={By DOI}, doi={10.48550/arXiv.2401.00005}, journal={arXiv preprint arXiv:2401.00005}}
@book{nobook, title={A book}, isbn={123}}
"""
    papers, rejects = _read(tmp_path, text)
    assert [p.id for p in papers] == ["2401.00001", "2401.00005"]
    first, by_doi = papers
    assert first.published is not None
    assert first.published.date().isoformat() == "2024-01-03"
    assert by_doi.journal_ref is None
    assert rejects[0] == "refs.bib:2 (good1): key: duplicate entry key"
    assert rejects[1] == "refs.bib:3 (notitle) (id 2401.00003): title: missing"
    assert rejects[2].startswith("refs.bib:4 (broken): invalid BibTeX:")
    assert rejects[3].startswith("refs.bib:6 (nobook): id: no arXiv id")
    assert len(rejects) == 4


def test_a_file_that_is_not_utf8_is_one_fatal_reject_with_its_line(tmp_path: Path) -> None:
    papers, rejects = _read(tmp_path, b"@misc{a, title={ok}, eprint={2401.00001}}\n@misc{b, title={\xff}}")
    assert papers == []
    assert rejects == ["refs.bib:2: not UTF-8 text (byte 0xff)"]


def test_a_bibtex_file_past_the_cap_is_refused_whole(tmp_path: Path) -> None:
    papers, rejects = _read(tmp_path, b"@misc{a, title={" + b"x" * MAX_FILE_BYTES + b"}}")
    assert papers == []
    assert rejects == [f"refs.bib: a BibTeX file may hold at most {MAX_FILE_BYTES:,} bytes of text"]
