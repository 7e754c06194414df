"""`paperfeed import` end to end on real SQLite files, with synthetic files written by the tests."""

from __future__ import annotations

from pathlib import Path

import orjson

from paperfeed.adapters.sources.jsonl_file import MAX_LINE_BYTES
from paperfeed.adapters.store import open_store

from .conftest import RunCli, rec, write_jsonl


def _store(data_dir: Path):  # type: ignore[no-untyped-def]
    return open_store(f"sqlite+pysqlite:///{data_dir / 'paperfeed.db'}")


def test_import_then_reimport_changes_nothing(cli: RunCli, tmp_path: Path, data_dir: Path) -> None:
    f = write_jsonl(tmp_path / "a.jsonl.gz", [rec("2503.00001"), rec("2503.00002", upvotes=4)], gz=True)
    first = cli("import", str(f))
    assert first.exit_code == 0, first.output
    assert "│     2 │       0 │         0 │        0 │" in first.output
    second = cli("import", str(f))
    assert second.exit_code == 0
    assert "│     0 │       0 │         2 │        0 │" in second.output
    store = _store(data_dir)
    try:
        assert store.stats().papers == 2
    finally:
        store.close()


def test_newer_version_updates_older_never_overwrites(cli: RunCli, tmp_path: Path, data_dir: Path) -> None:
    old = rec("2503.00001", title="Old", version=1, updated="2025-03-18")
    new = rec("2503.00001", title="New", version=2, updated="2025-04-01")
    cli("import", str(write_jsonl(tmp_path / "new.jsonl", [new])))
    result = cli("import", str(write_jsonl(tmp_path / "old.jsonl", [old])))
    assert result.exit_code == 0
    store = _store(data_dir)
    try:
        paper = store.get_paper("2503.00001")
        assert paper is not None
        assert (paper.title, paper.version) == ("New", 2)
    finally:
        store.close()
    cli("import", str(write_jsonl(tmp_path / "newer.jsonl", [rec("2503.00001", title="Newest", version=3)])))
    store = _store(data_dir)
    try:
        paper = store.get_paper("2503.00001")
        assert paper is not None
        assert paper.title == "Newest"
    finally:
        store.close()


def test_bad_records_are_rejected_with_file_line_and_reason(
    cli: RunCli, tmp_path: Path, data_dir: Path
) -> None:
    lines = [
        rec("2503.00001"),  # 1 ok
        b'{"id": "2503.00002", "title": ',  # 2 bad JSON
        rec("2503.00003", title=None),  # 3 missing title
        rec("not-an-id"),  # 4 invalid id
        rec("2503.00005", authors="Ada"),  # 5 wrong type
        rec("2503.00006", abstract="x" * 10_000_001),  # 6 10 MB abstract
        b'{"id": "2503.00007", "title": "Bad \xff\xfe bytes"}',  # 7 invalid UTF-8
        rec("2503.00008", title="Control\x00\x07 chars\u202e ok"),  # 8 accepted, cleaned
        b"[1, 2, 3]",  # 9 not an object
        rec("2503.00010", upvotes="many"),  # 10 wrong type
        b'{"id": "2503.00011", "title": "\\ud800 lone surrogate"}',  # 11 undecodable text via an escape
        rec("2503.00012", published="yesterday"),  # 12 bad date
        b"",  # 13 blank line: ignored
        rec("2503.00014"),  # 14 ok
    ]
    f = write_jsonl(tmp_path / "bad.jsonl", lines)
    rejects = tmp_path / "rejects.jsonl"
    result = cli("import", str(f), "--rejects", str(rejects))
    assert result.exit_code == 1
    got = {r["where"].split(" ")[0]: r for r in map(orjson.loads, rejects.read_bytes().splitlines())}
    expect = {
        2: "bad JSON",
        3: "missing",
        4: "not an arXiv id",
        5: "expected a list",
        6: "too long",
        7: "invalid UTF-8",
        9: "expected a JSON object",
        10: "expected a whole number",
        11: "surrogate",
        12: "not an ISO-8601",
    }
    assert set(got) == {f"{f}:{n}" for n in expect}
    for n, reason in expect.items():
        assert reason in got[f"{f}:{n}"]["reason"], (n, got[f"{f}:{n}"])
    assert got[f"{f}:3"]["field"] == "title"
    assert got[f"{f}:5"]["field"] == "authors"
    store = _store(data_dir)
    try:
        assert store.stats().papers == 3
        cleaned = store.get_paper("2503.00008")
        assert cleaned is not None
        assert cleaned.title == "Control chars ok"
    finally:
        store.close()
    assert cli("import", str(f), "--keep-going").exit_code == 0


def test_over_long_line_is_rejected_and_the_rest_imported(
    cli: RunCli, tmp_path: Path, data_dir: Path
) -> None:
    huge = b'{"id": "2503.00002", "title": "' + b"x" * (MAX_LINE_BYTES + 10) + b'"}'
    f = write_jsonl(tmp_path / "huge.jsonl", [rec("2503.00001"), huge, rec("2503.00003")])
    result = cli("import", str(f), "--rejects", str(tmp_path / "r.jsonl"))
    assert result.exit_code == 1
    rejects = [orjson.loads(x) for x in (tmp_path / "r.jsonl").read_bytes().splitlines()]
    assert [r["where"] for r in rejects] == [f"{f}:2"]
    store = _store(data_dir)
    try:
        assert store.stats().papers == 2
    finally:
        store.close()


def test_truncated_gzip_keeps_what_was_read(cli: RunCli, tmp_path: Path, data_dir: Path) -> None:
    good = write_jsonl(
        tmp_path / "g.jsonl.gz",
        [rec(f"2503.{i:05d}", abstract=f"text {i} " * 50) for i in range(1, 3001)],
        gz=True,
    )
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    result = cli("import", str(cut))
    assert result.exit_code == 1
    assert "the file ends early here" in result.output
    store = _store(data_dir)
    try:
        assert 0 < store.stats().papers < 3000
    finally:
        store.close()


def test_missing_file_is_a_usage_error(cli: RunCli, tmp_path: Path) -> None:
    result = cli("import", str(tmp_path / "nope.jsonl"))
    assert result.exit_code == 2
    assert "no such file" in " ".join(result.output.split())  # the console wraps at its width


def test_arxiv_snapshot_format(cli: RunCli, tmp_path: Path, data_dir: Path) -> None:
    snap = {
        "id": "0704.0001",
        "submitter": "Pavel Nadolsky",
        "authors": "C. Bal\\'azs, E. L. Berger, P. M. Nadolsky, C.-P. Yuan",
        "title": "Calculation of prompt diphoton production cross sections at Tevatron and\n  LHC energies",
        "comments": "37 pages, 15 figures",
        "journal-ref": "Phys.Rev.D76:013009,2007",
        "doi": "10.1103/PhysRevD.76.013009",
        "report-no": "ANL-HEP-PR-07-12",
        "categories": "hep-ph hep-ex",
        "license": None,
        "abstract": "  A fully differential calculation in perturbative QCD is\npresented.\n",
        "versions": [
            {"version": "v1", "created": "Mon, 2 Apr 2007 19:18:42 GMT"},
            {"version": "v2", "created": "Tue, 24 Jul 2007 20:10:27 GMT"},
        ],
        "update_date": "2008-11-13",
        "authors_parsed": [
            ["Balázs", "C.", ""],
            ["Berger", "E. L.", ""],
            ["Nadolsky", "P. M.", ""],
            ["Yuan", "C. -P.", ""],
        ],
    }
    old_style = dict(
        snap,
        id="hep-th/9901001",
        categories="hep-th",
        versions=[{"version": "v1", "created": "Fri, 1 Jan 1999 00:00:00 GMT"}],
    )
    bad = dict(snap, id="0704.0002", versions=[{"version": "one", "created": "x"}])
    f = write_jsonl(tmp_path / "arxiv-metadata-oai-snapshot.json", [snap, old_style, bad])
    result = cli("import", str(f), "--rejects", str(tmp_path / "r.jsonl"))
    assert result.exit_code == 1
    store = _store(data_dir)
    try:
        paper = store.get_paper("0704.0001")
        assert paper is not None
        assert (
            paper.title
            == "Calculation of prompt diphoton production cross sections at Tevatron and LHC energies"
        )
        assert paper.authors == ("C. Balázs", "E. L. Berger", "P. M. Nadolsky", "C. -P. Yuan")
        assert paper.categories == ("hep-ph", "hep-ex")
        assert paper.version == 2
        assert paper.published is not None
        assert paper.published.isoformat() == "2007-04-02T19:18:42+00:00"
        assert paper.journal_ref == "Phys.Rev.D76:013009,2007"
        assert paper.doi == "10.1103/PhysRevD.76.013009"
        assert paper.comment == "37 pages, 15 figures"
        assert store.get_paper("hep-th/9901001") is not None
    finally:
        store.close()
    reject = orjson.loads((tmp_path / "r.jsonl").read_bytes().splitlines()[0])
    assert reject["field"] == "versions[0].version"


def test_non_arxiv_ids_need_a_namespace(cli: RunCli, tmp_path: Path, data_dir: Path) -> None:
    f = write_jsonl(
        tmp_path / "corpus.jsonl", [{"id": "4983", "title": "Microstructural development", "abstract": "x"}]
    )
    assert cli("import", str(f)).exit_code == 1
    assert cli("import", str(f), "--id-namespace", "scifact").exit_code == 0
    store = _store(data_dir)
    try:
        assert store.get_paper("scifact:4983") is not None
    finally:
        store.close()


def test_hf_daily_dates_become_listings(cli: RunCli, tmp_path: Path, data_dir: Path) -> None:
    f = write_jsonl(
        tmp_path / "hf.jsonl",
        [rec("2503.00001", upvotes=12, daily_date="2025-03-19", daily_dates=["2025-03-19", "2025-03-20"])],
    )
    assert cli("import", str(f)).exit_code == 0
    store = _store(data_dir)
    try:
        from datetime import date

        listings = store.listings_for_day(date(2025, 3, 20))
        assert [(x.paper_id, x.source, x.upvotes) for x in listings] == [("2503.00001", "hf-daily", 12)]
    finally:
        store.close()


def test_stats_json(cli: RunCli, tmp_path: Path) -> None:
    cli("import", str(write_jsonl(tmp_path / "a.jsonl", [rec("2503.00001")])))
    result = cli("stats", "--json")
    assert result.exit_code == 0
    assert orjson.loads(result.output)["papers"] == 1


def test_old_classics_are_imported_and_impossible_dates_rejected_with_file_line(
    cli: RunCli, tmp_path: Path, data_dir: Path
) -> None:
    """Papers of the 1960s and 70s are real scholarly works (#30); year 801 and next decade are not."""
    f = write_jsonl(
        tmp_path / "classics.jsonl",
        [
            rec("hep-th/9901001", title="A classic of 1967", published="1967-11-20"),  # 1
            rec("2503.00002", title="Dated 801", published="0801-01-01"),  # 2
            rec("2503.00003", title="A classic of 1974", published="1974-01-01T00:00:00Z"),  # 3
            rec("2503.00004", title="From the future", published="2099-01-01"),  # 4
        ],
    )
    result = cli("import", str(f), "--rejects", str(tmp_path / "r.jsonl"))
    assert result.exit_code == 1, result.output
    rejects = [orjson.loads(x) for x in (tmp_path / "r.jsonl").read_bytes().splitlines()]
    assert [(r["where"], r["field"]) for r in rejects] == [
        (f"{f}:2 (id 2503.00002)", "published"),
        (f"{f}:4 (id 2503.00004)", "published"),
    ]
    assert "year 801 is before 1600" in rejects[0]["reason"]
    assert "more than a year in the future" in rejects[1]["reason"]
    printed = " ".join(result.output.split())
    assert f"{f}:2" in printed
    assert "year 801 is before 1600" in printed
    store = _store(data_dir)
    try:
        classic = store.get_paper("hep-th/9901001")
        assert classic is not None
        assert classic.published is not None
        assert classic.published.year == 1967
        assert store.stats().papers == 2
    finally:
        store.close()
