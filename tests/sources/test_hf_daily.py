"""Hugging Face Daily Papers: parsing real API responses, ranking, rejects, and the real CLI over loopback."""

from __future__ import annotations

import json
import re
import socket
import time
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from paperfeed.adapters.sources.hf_daily import (
    HF_DAILY,
    HfDailySource,
    NotAList,
    decode_day,
    parse_day,
    parse_item,
)
from paperfeed.adapters.sources.http import PoliteClient
from paperfeed.adapters.store import SqlPaperStore, open_store
from paperfeed.cli import cli_app as app
from paperfeed.domain.errors import SourceUnavailable
from paperfeed.domain.ingest import Batch
from paperfeed.domain.validation import InvalidRecord, build_paper
from paperfeed.services.ingest import IngestService
from tests.support.defaults import polite_client
from tests.support.http_server import ReplayServer, Reply

SEEN = datetime(2026, 8, 22, 7, 45, tzinfo=UTC)
EXPECTED_COUNTS = {"2024-05-27": 13, "2025-03-14": 26, "2026-08-20": 15, "2026-08-21": 17}
PATH = "/api/daily_papers"
RANGE = ("2026-08-20", "2026-08-21")


def _raw(fixtures_dir: Path, day: str) -> list[dict[str, Any]]:
    data = json.loads((fixtures_dir / "hf_daily_api" / f"{day}.json").read_text(encoding="utf-8"))
    assert isinstance(data, list)
    return data


def _body(fixtures_dir: Path, day: str) -> bytes:
    return (fixtures_dir / "hf_daily_api" / f"{day}.json").read_bytes()


def _item(pid: str | None = "2608.00001", upvotes: Any = 1, **paper: Any) -> dict[str, Any]:
    """A small synthetic response item in the API's shape."""
    fields: dict[str, Any] = {"title": f"Paper {pid}", "summary": "Abstract.", "upvotes": upvotes}
    if pid is not None:
        fields["id"] = pid
    fields.update(paper)
    return {"paper": fields, "numComments": 0}


# -- parsing the four real responses ----------------------------------------------------------------


@pytest.mark.shared
@pytest.mark.parametrize("day", sorted(EXPECTED_COUNTS))
def test_every_item_of_each_fixture_becomes_a_paper_with_a_ranked_listing(
    fixtures_dir: Path, day: str
) -> None:
    raw = _raw(fixtures_dir, day)
    ids = [
        item["paper"]["id"] for item in raw if isinstance(item.get("paper"), dict) and "id" in item["paper"]
    ]
    upvotes = {item["paper"]["id"]: item["paper"]["upvotes"] for item in raw}

    result = parse_day(raw, date.fromisoformat(day), seen_at=SEEN)

    assert len(result.papers) == len(ids) == len(raw) == EXPECTED_COUNTS[day]
    assert result.rejects == []
    assert [p.id for p in result.papers] == ids
    assert all(p.sources == {HF_DAILY: "2026-08-22T07:45:00Z"} for p in result.papers)
    # rank: by upvotes, highest first, ties in response order
    order = sorted(range(len(raw)), key=lambda i: -raw[i]["paper"]["upvotes"])
    assert [(x.paper_id, x.rank) for x in result.listings] == [(ids[i], r) for r, i in enumerate(order)]
    assert all(x.day == date.fromisoformat(day) and x.source == HF_DAILY for x in result.listings)
    assert {x.paper_id: x.upvotes for x in result.listings} == upvotes


@pytest.mark.shared
def test_fields_of_a_2026_paper_with_repo_stars_page_and_ai_fields(fixtures_dir: Path) -> None:
    result = parse_day(_raw(fixtures_dir, "2026-08-20"), date(2026, 8, 20), seen_at=SEEN)
    papers = {p.id: p for p in result.papers}
    zetta = papers["2608.16590"]
    assert zetta.title.startswith("Zetta ζ: An Efficient Closed-Loop Embodied Harness")
    assert zetta.abstract.startswith("Embodied agents are increasingly used to close the gap")
    assert zetta.authors[:3] == ("Xin Ding", "Liang Mi", "Mingzhe Huang")
    assert len(zetta.authors) == 15
    assert zetta.authors[-1] == "Ting Cao"
    assert zetta.published == datetime(2026, 8, 17, tzinfo=UTC)  # paper.publishedAt, not the item's
    assert zetta.upvotes == 92
    assert zetta.num_comments == 1
    assert zetta.github_repo == "https://github.com/air-embodied-brain/Zetta-Embodiment"
    assert zetta.github_stars == 152
    assert zetta.project_page == "https://air-embodied-brain.github.io/zetta/"
    assert zetta.organization is None
    assert zetta.ai_summary is not None
    assert zetta.ai_summary.startswith("Zetta is a closed-loop embodied")
    assert len(zetta.ai_keywords) == 11
    assert zetta.ai_keywords[0] == "closed-loop embodied harness"
    assert zetta.ai_keywords[-1] == "zero-shot skill transfer"
    assert zetta.categories == ()
    assert zetta.version is None

    assert papers["2608.17253"].organization == "University of California at San Diego"
    assert papers["2608.18565"].organization == "Midea AI Research Center"
    assert papers["2608.18115"].github_stars == 0  # a real zero, not "unknown"
    ranks = {x.paper_id: x.rank for x in result.listings}
    assert ranks["2608.18565"] == 2
    assert ranks["2608.17426"] == 3
    assert [ranks[i] for i in ("2608.18746", "2608.18701", "2608.18423", "2608.13947")] == [9, 10, 11, 12]
    assert ranks["2608.14229"] == 14


@pytest.mark.shared
def test_fields_of_2026_08_21_google_paper(fixtures_dir: Path) -> None:
    result = parse_day(_raw(fixtures_dir, "2026-08-21"), date(2026, 8, 21), seen_at=SEEN)
    top = result.papers[0]
    assert top.id == "2608.19880"
    assert (top.upvotes, top.github_stars, top.organization) == (163, 8, "Google")
    assert top.project_page == "https://envharness.com/"
    assert result.listings[0].paper_id == "2608.19880"
    assert result.listings[0].rank == 0
    ustc = next(p for p in result.papers if p.id == "2608.18580")
    # fullname's doubled space is whitespace-normalised like every other text field
    assert ustc.organization == "university of science and technology of china"


@pytest.mark.shared
def test_fields_of_2025_paper_without_stars_or_organization(fixtures_dir: Path) -> None:
    result = parse_day(_raw(fixtures_dir, "2025-03-14"), date(2025, 3, 14), seen_at=SEEN)
    papers = {p.id: p for p in result.papers}
    costa = papers["2503.10613"]
    assert costa.github_repo == "https://github.com/tianyi-lab/CoSTAR"
    assert costa.github_stars is None
    assert costa.project_page is None
    assert costa.organization is None
    assert costa.num_comments == 7
    assert costa.upvotes == 29
    assert len(costa.ai_keywords) == 27
    assert "A* search" in costa.ai_keywords
    assert costa.ai_summary is None
    assert "\n" not in costa.abstract
    assert costa.abstract.startswith("Text-to-image models like stable")
    assert costa.authors == ("Advait Gupta", "NandaKiran Velaga", "Dang Nguyen", "Tianyi Zhou")
    atlas = papers["2503.10633"]
    assert atlas.project_page == "https://horwitz.ai/model-atlas"
    assert atlas.github_repo == "https://github.com/eliahuhorwitz/Model-Atlas"


@pytest.mark.shared
def test_fields_of_2024_paper_from_the_older_format(fixtures_dir: Path) -> None:
    result = parse_day(_raw(fixtures_dir, "2024-05-27"), date(2024, 5, 27), seen_at=SEEN)
    first = result.papers[0]
    assert first.id == "2405.15738"
    assert (first.upvotes, first.num_comments) == (32, 3)
    assert first.published == datetime(2024, 5, 24, 17, 34, 15, tzinfo=UTC)
    assert first.ai_keywords == ()
    assert first.github_repo is None
    assert first.organization is None
    assert [x.upvotes for x in result.listings] == [32, 28, 19, 11, 10, 9, 9, 7, 7, 7, 5, 4, 3]


# -- ranking, hidden authors, rejects -----------------------------------------------------------------


def test_rank_sorts_by_upvotes_and_keeps_response_order_for_ties() -> None:
    items = [_item("2608.00001", 1), _item("2608.00002", 5), _item("2608.00003", 5), _item("2608.00004", 3)]
    result = parse_day(items, date(2026, 8, 20), seen_at=SEEN)
    assert [(x.paper_id, x.rank, x.upvotes) for x in result.listings] == [
        ("2608.00002", 0, 5),
        ("2608.00003", 1, 5),
        ("2608.00004", 2, 3),
        ("2608.00001", 3, 1),
    ]


def test_a_paper_listed_twice_in_one_day_keeps_its_best_rank() -> None:
    items = [_item("2608.00001", 9), _item("2608.00002", 4), _item("2608.00001", 9)]
    result = parse_day(items, date(2026, 8, 20), seen_at=SEEN)
    assert [(x.paper_id, x.rank) for x in result.listings] == [("2608.00001", 0), ("2608.00002", 1)]


def test_hidden_authors_are_skipped_and_order_is_kept() -> None:
    authors = [
        {"name": "Ada Lovelace", "hidden": False},
        {"name": "Mis Parsed", "hidden": True},
        {"name": "Alan Turing"},
    ]
    paper = parse_item(_item(authors=authors), seen_at=SEEN)
    assert paper.authors == ("Ada Lovelace", "Alan Turing")


def test_versioned_id_and_item_level_fallbacks() -> None:
    item = {"paper": {"id": "2608.00001v2", "upvotes": 3}, "title": "Top-level title", "summary": "Top."}
    paper = parse_item(item, seen_at=SEEN)
    assert (paper.id, paper.version, paper.title, paper.abstract) == (
        "2608.00001",
        2,
        "Top-level title",
        "Top.",
    )


def test_bad_items_are_rejected_with_where_and_field_and_the_rest_goes_on() -> None:
    items: list[Any] = [
        _item("2608.00001", 7),
        _item(None, 3),  # no paper.id
        _item("2608.00002", "12"),  # upvotes as a string
        "not an object",
        {"paper": ["2608.00003"]},
        _item("2608.00004", 1, authors="A. Author"),
        _item("2608.00005", 1, authors=[{"name": 42}]),
        _item("not-an-id", 1),
        {"paper": {"id": "2608.00006", "title": "T", "upvotes": 1}, "organization": 5},
        {"paper": {"id": "2608.00007", "upvotes": 1}},  # no title anywhere
        _item("2608.00008", 2),
    ]
    result = parse_day(items, date(2026, 8, 20), seen_at=SEEN)
    assert [p.id for p in result.papers] == ["2608.00001", "2608.00008"]
    assert [(x.paper_id, x.rank) for x in result.listings] == [("2608.00001", 0), ("2608.00008", 1)]
    got = [(r.where, r.field, r.reason) for r in result.rejects]
    assert got == [
        ("2026-08-20#1", "paper.id", "missing"),
        ("2026-08-20#2 (id 2608.00002)", "paper.upvotes", "expected a whole number, got str"),
        ("2026-08-20#3", "item", "expected a JSON object, got str"),
        ("2026-08-20#4", "paper", "expected an object, got list"),
        ("2026-08-20#5 (id 2608.00004)", "paper.authors", "expected a list of author objects, got str"),
        ("2026-08-20#6 (id 2608.00005)", "paper.authors[0].name", "expected a string, got int"),
        ("2026-08-20#7 (id not-an-id)", "paper.id", "not an arXiv id: 'not-an-id'"),
        ("2026-08-20#8 (id 2608.00006)", "organization", "expected an object, got int"),
        ("2026-08-20#9 (id 2608.00007)", "paper.title", "missing"),
    ]
    assert str(result.rejects[0]) == "2026-08-20#1: paper.id: missing"


def test_parse_item_raises_invalid_record() -> None:
    with pytest.raises(InvalidRecord, match=r"paper\.githubStars"):
        parse_item(_item(githubStars=-1), seen_at=SEEN)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b'{"error": "Invalid date"}', "expected a JSON list of papers, got a JSON dict: 'Invalid date'"),
        (b"<html>busy</html>", "response is not JSON"),
        (b"42", "got a JSON int"),
    ],
)
def test_a_body_that_is_not_a_json_list_is_a_clear_error(body: bytes, message: str) -> None:
    with pytest.raises(NotAList, match=re.escape(message)):
        decode_day(body)


def test_resume_day_from_checkpoint() -> None:
    source = HfDailySource(polite_client("t"), "http://x/api", date(2026, 8, 20), date(2026, 8, 22))
    assert source.checkpoint_name == "hf-daily:2026-08-20..2026-08-22"
    assert source.resume_day(None) == date(2026, 8, 20)
    assert source.resume_day("2026-08-20") == date(2026, 8, 21)
    assert source.resume_day("garbage") == date(2026, 8, 20)
    assert source.resume_day("2025-01-01") == date(2026, 8, 20)  # not this range's
    one = HfDailySource(polite_client("t"), "http://x/api", date(2026, 8, 20), date(2026, 8, 20))
    assert one.checkpoint_name is None
    with pytest.raises(ValueError, match="ends"):
        HfDailySource(polite_client("t"), "http://x/api", date(2026, 8, 21), date(2026, 8, 20))


# -- the source over a real loopback server -----------------------------------------------------------


def _source(server: ReplayServer, start: str, end: str, **client: Any) -> HfDailySource:
    polite = PoliteClient("paperfeed-test", 5, client.pop("retries", 0), {}, **client)
    return HfDailySource(
        polite, server.base_url + "/api", date.fromisoformat(start), date.fromisoformat(end), now=SEEN
    )


def test_empty_days_are_fine_and_every_day_is_fetched(server: ReplayServer, store: SqlPaperStore) -> None:
    server.add(PATH, Reply(200, json.dumps([_item("2608.00001", 4)]).encode()), params={"date": "2026-08-22"})
    server.add(PATH, Reply(200, b"[]"), params={"date": "2026-08-23"})  # a weekend with nothing
    server.add(PATH, Reply(200, json.dumps([_item("2608.00002", 2)]).encode()), params={"date": "2026-08-24"})
    source = _source(server, "2026-08-22", "2026-08-24")
    batches: list[Batch] = []
    for batch in source.batches(None):
        store.apply_batch(batch)
        batches.append(batch)
    assert [r.params["date"] for r in server.requests] == ["2026-08-22", "2026-08-23", "2026-08-24"]
    assert [(b.position, b.total, len(b.papers)) for b in batches] == [(1, 3, 1), (2, 3, 0), (3, 3, 1)]
    assert [b.checkpoint for b in batches] == [
        ("hf-daily:2026-08-22..2026-08-24", "2026-08-22"),
        ("hf-daily:2026-08-22..2026-08-24", "2026-08-23"),
        ("hf-daily:2026-08-22..2026-08-24", "2026-08-24"),
    ]
    assert store.listings_for_day(date(2026, 8, 23)) == []
    assert [x.paper_id for x in store.listings_for_day(date(2026, 8, 24))] == ["2608.00002"]


def test_retry_after_is_honoured(server: ReplayServer, store: SqlPaperStore) -> None:
    ok = Reply(200, json.dumps([_item("2608.00001", 4)]).encode())
    server.add(
        PATH, Reply(429, b"slow down", {"Retry-After": "7"}), Reply(503, b"", {"Retry-After": "3"}), ok
    )
    slept: list[float] = []
    source = _source(server, "2026-08-22", "2026-08-22", retries=2, sleep=slept.append)
    summary = IngestService(store).run(source)
    assert summary.added == 1
    assert slept == [7.0, 3.0]
    assert len(server.requests) == 3


def test_pages_linked_with_rel_next_are_followed(server: ReplayServer, store: SqlPaperStore) -> None:
    page0 = json.dumps([_item("2608.00001", 9), _item("2608.00002", 5)]).encode()
    page1 = json.dumps([_item("2608.00003", 7)]).encode()
    link = f'<{server.base_url}{PATH}?date=2026-08-22&p=1>; rel="next"'
    server.add(PATH, Reply(200, page0, {"Link": link}), params={"date": "2026-08-22"})
    server.add(PATH, Reply(200, page1), params={"date": "2026-08-22", "p": "1"})
    IngestService(store).run(_source(server, "2026-08-22", "2026-08-22"))
    assert [r.params for r in server.requests] == [{"date": "2026-08-22"}, {"date": "2026-08-22", "p": "1"}]
    listed = store.listings_for_day(date(2026, 8, 22), HF_DAILY)
    assert sorted((x.rank, x.paper_id) for x in listed) == [
        (0, "2608.00001"),
        (1, "2608.00003"),
        (2, "2608.00002"),
    ]


def test_a_next_link_to_another_host_is_not_followed(server: ReplayServer, store: SqlPaperStore) -> None:
    body = json.dumps([_item("2608.00001", 9)]).encode()
    server.add(PATH, Reply(200, body, {"Link": '<http://203.0.113.9/api/daily_papers?p=1>; rel="next"'}))
    summary = IngestService(store).run(_source(server, "2026-08-22", "2026-08-22"))
    assert summary.added == 1
    assert len(server.requests) == 1


def test_unreachable_source_raises_source_unavailable(store: SqlPaperStore) -> None:
    port = _closed_port()
    source = HfDailySource(
        PoliteClient("t", timeout=2, retries=0, min_interval={}),
        f"http://127.0.0.1:{port}/api",
        date(2026, 8, 20),
        date(2026, 8, 21),
    )
    with pytest.raises(SourceUnavailable, match="unreachable"):
        IngestService(store).run(source)


# -- merging with an arXiv observation ----------------------------------------------------------------


def _arxiv_paper() -> Batch:
    fields = {
        "id": "2608.16590v2",
        "title": "Zetta: An Efficient Closed-Loop Embodied Harness for Self-Evolving Physical Intelligence",
        "abstract": "Embodied agents (arXiv text).",
        "authors": ["Xin Ding", "Liang Mi"],
        "categories": ["cs.RO", "cs.AI"],
        "published": "2026-08-17T00:00:00Z",
        "updated": "2026-08-19T00:00:00Z",
    }
    return Batch(papers=[build_paper(fields, source="arxiv-oai", seen_at=SEEN - timedelta(days=1))])


def _hf_batch(fixtures_dir: Path) -> Batch:
    result = parse_day(_raw(fixtures_dir, "2026-08-20"), date(2026, 8, 20), seen_at=SEEN)
    return Batch(papers=result.papers, listings=result.listings)


@pytest.mark.shared
@pytest.mark.parametrize("arxiv_first", [True, False])
def test_merge_with_arxiv_keeps_categories_and_adds_upvotes(
    store: SqlPaperStore, fixtures_dir: Path, arxiv_first: bool
) -> None:
    batches = [_arxiv_paper(), _hf_batch(fixtures_dir)]
    for batch in batches if arxiv_first else batches[::-1]:
        store.apply_batch(batch)
    paper = store.get_paper("2608.16590")
    assert paper is not None
    assert paper.categories == ("cs.RO", "cs.AI")  # from arXiv
    assert paper.version == 2
    assert paper.title.startswith("Zetta: An Efficient")  # the versioned arXiv record is the fresher content
    assert paper.authors == ("Xin Ding", "Liang Mi")
    assert (paper.upvotes, paper.num_comments, paper.github_stars) == (92, 1, 152)  # from HF
    assert paper.github_repo == "https://github.com/air-embodied-brain/Zetta-Embodiment"
    assert len(paper.ai_keywords) == 11
    assert set(paper.sources) == {"arxiv-oai", HF_DAILY}
    listing = store.listings_for_day(date(2026, 8, 20), HF_DAILY)
    assert next(x for x in listing if x.paper_id == "2608.16590").rank == 0


# -- the real CLI end to end ---------------------------------------------------------------------------


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


def _env(tmp_path: Path, api_url: str, retries: int = 0) -> dict[str, str]:
    return {
        "PAPERFEED_DATA_DIR": str(tmp_path / "data"),
        "PAPERFEED_HF_API_URL": api_url,
        "PAPERFEED_HF_DELAY": "0",
        "PAPERFEED_HTTP_RETRIES": str(retries),
        "PAPERFEED_HTTP_TIMEOUT": "5",
    }


def _harvest(env: dict[str, str], *args: str) -> Result:
    return CliRunner().invoke(app, ["harvest", "hf", *args], env=env)


def _summary_row(output: str) -> dict[str, int]:
    """The counts row of the summary table: added, updated, unchanged, rejected, listings."""
    rows = [line for line in output.splitlines() if re.fullmatch(r"[\s│|]*(?:[\d,]+[\s│|]+){6}", line)]
    assert len(rows) == 1, output
    numbers = [int(n.replace(",", "")) for n in re.findall(r"[\d,]+", rows[0])]
    return dict(zip(("added", "updated", "unchanged", "rejected", "listings"), numbers, strict=False))


def _open(tmp_path: Path) -> SqlPaperStore:
    return open_store(f"sqlite+pysqlite:///{tmp_path / 'data' / 'paperfeed.db'}")


def _serve(server: ReplayServer, fixtures_dir: Path, *days: str) -> None:
    for day in days:
        headers = {"Content-Type": "application/json"}
        server.add(PATH, Reply(200, _body(fixtures_dir, day), headers), params={"date": day})


@pytest.mark.shared
def test_cli_range_harvest_end_to_end_and_again_changes_nothing(
    server: ReplayServer, fixtures_dir: Path, tmp_path: Path
) -> None:
    _serve(server, fixtures_dir, *RANGE)
    raw = {day: _raw(fixtures_dir, day) for day in RANGE}
    ids = {day: [item["paper"]["id"] for item in raw[day]] for day in RANGE}
    unique = set(ids[RANGE[0]]) | set(ids[RANGE[1]])
    assert len(unique) == 32  # no paper is on both days
    env = _env(tmp_path, server.base_url + "/api")

    first = _harvest(env, "--from", RANGE[0], "--until", RANGE[1])
    assert first.exit_code == 0, first.output
    assert _summary_row(first.stdout) == {
        "added": 32,
        "updated": 0,
        "unchanged": 0,
        "rejected": 0,
        "listings": 32,
    }
    assert [r.params["date"] for r in server.requests] == list(RANGE)
    assert all(r.path == PATH for r in server.requests)
    assert server.requests[0].headers["User-Agent"].startswith("paperfeed/")

    store = _open(tmp_path)
    try:
        stats = store.stats()
        assert stats.papers == len(unique) == 32
        assert stats.listings == 32
        assert stats.listing_days == 2
        for day in RANGE:
            listed = store.listings_for_day(date.fromisoformat(day), HF_DAILY)
            assert sorted(x.paper_id for x in listed) == sorted(ids[day])
            by_rank = sorted(listed, key=lambda x: x.rank if x.rank is not None else -1)
            assert [x.rank for x in by_rank] == list(range(len(ids[day])))
            assert [x.upvotes for x in by_rank] == sorted(
                (i["paper"]["upvotes"] for i in raw[day]), reverse=True
            )
        assert store.get_checkpoint("hf-daily:2026-08-20..2026-08-21") is None  # cleared once done
        top = store.get_paper("2608.19880")
        assert top is not None
        assert top.upvotes == 163
        assert top.organization == "Google"
    finally:
        store.close()

    again = _harvest(env, "--from", RANGE[0], "--until", RANGE[1])
    assert again.exit_code == 0, again.output
    assert _summary_row(again.stdout) == {
        "added": 0,
        "updated": 0,
        "unchanged": 32,
        "rejected": 0,
        "listings": 32,
    }
    assert [r.params["date"] for r in server.requests] == [*RANGE, *RANGE]


@pytest.mark.shared
def test_cli_range_interrupted_after_day_one_resumes_at_day_two(
    server: ReplayServer, fixtures_dir: Path, tmp_path: Path
) -> None:
    _serve(server, fixtures_dir, RANGE[0])
    server.add(PATH, Reply(500, b"internal error"), params={"date": RANGE[1]})  # forever
    env = _env(tmp_path, server.base_url + "/api", retries=0)

    broken = _harvest(env, "--from", RANGE[0], "--until", RANGE[1])
    assert broken.exit_code == 3, broken.output
    assert "Traceback" not in broken.output
    lines = broken.stderr.strip().splitlines()
    assert len(lines) == 1, broken.stderr
    assert "cannot reach Hugging Face Daily Papers" in lines[0]
    assert "HTTP 500" in lines[0]
    assert "run the same command again to resume" in lines[0]
    assert "paperfeed import" in lines[0]
    assert "make run DATA=" in lines[0]
    store = _open(tmp_path)
    try:
        assert store.stats().papers == 15
        assert store.get_checkpoint("hf-daily:2026-08-20..2026-08-21") == "2026-08-20"
    finally:
        store.close()

    _serve(server, fixtures_dir, RANGE[1])  # the server is fixed
    server.requests.clear()
    resumed = _harvest(env, "--from", RANGE[0], "--until", RANGE[1])
    assert resumed.exit_code == 0, resumed.output
    assert [r.params["date"] for r in server.requests] == [RANGE[1]]  # day 1 is not fetched again
    assert "resuming 2026-08-20..2026-08-21 at 2026-08-21" in resumed.stderr
    assert _summary_row(resumed.stdout)["added"] == 17
    store = _open(tmp_path)
    try:
        assert store.stats().papers == 32
        assert store.get_checkpoint("hf-daily:2026-08-20..2026-08-21") is None
    finally:
        store.close()


def test_cli_unreachable_exits_3_with_one_line_and_the_import_hint(tmp_path: Path) -> None:
    env = _env(tmp_path, f"http://127.0.0.1:{_closed_port()}/api")
    started = time.monotonic()
    result = _harvest(env, "--date", "2026-08-20")
    assert time.monotonic() - started < 10
    assert result.exit_code == 3, result.output
    assert "Traceback" not in result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: cannot reach Hugging Face Daily Papers: 127.0.0.1:")
    assert "nothing new was stored" in lines[0]
    assert "paperfeed import FILE.jsonl.gz (or make run DATA=FILE.jsonl.gz)" in lines[0]


def test_cli_day_that_is_not_a_list_is_rejected_by_date(server: ReplayServer, tmp_path: Path) -> None:
    server.add(PATH, Reply(200, b'{"error": "Invalid date"}'), params={"date": "2026-08-20"})
    env = _env(tmp_path, server.base_url + "/api")
    result = _harvest(env, "--date", "2026-08-20")
    assert result.exit_code == 1, result.output
    assert "rejected 2026-08-20: " in result.stderr
    assert "expected a JSON list of papers, got a JSON dict: 'Invalid date'" in result.stderr
    assert _harvest(env, "--date", "2026-08-20", "--keep-going").exit_code == 0


def test_cli_defaults_to_today(server: ReplayServer, tmp_path: Path) -> None:
    server.add(PATH, Reply(200, json.dumps([_item("2608.00001", 4)]).encode()))
    before = datetime.now(UTC).date().isoformat()
    result = _harvest(_env(tmp_path, server.base_url + "/api"))
    after = datetime.now(UTC).date().isoformat()
    assert result.exit_code == 0, result.output
    assert len(server.requests) == 1
    assert server.requests[0].params["date"] in {before, after}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--date", "2026-08-20", "--from", "2026-08-19"], "use either --date or --from/--until"),
        (["--date", "20-08-2026"], "--date: not a date (expected YYYY-MM-DD): '20-08-2026'"),
        (["--until", "2026-08-20"], "--until needs --from"),
        (["--from", "2026-08-21", "--until", "2026-08-20"], "--until 2026-08-20 is before --from 2026-08-21"),
    ],
)
def test_cli_usage_errors_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    result = _harvest(_env(tmp_path, "http://127.0.0.1:9/api"), *args)
    assert result.exit_code == 2, result.output
    assert message in " ".join(result.stderr.split())
