"""An administrator's upload of a file of papers (``POST /admin/import``): what it imports, what it refuses.

Each refusal is checked for its status, its message and that the store is unchanged; the temporary
folder an upload is streamed into is gone afterwards whatever happened.
"""

from __future__ import annotations

import gzip
import html
import re
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from paperfeed.bootstrap import App

from .conftest import HTML, csrf_from, jsonl_bytes, rec, sign_in_as

BIB = """% exported by a reference manager
@misc{fishwick2025zebra,
  title         = {Zebrafish {Locomotion} with \\"{U}ber-sparse $\\alpha$-Transformers},
  author        = {Fishwick, Ada and Okoro, Ben and others},
  year          = {2025},
  eprint        = {2501.00201},
  archivePrefix = {arXiv},
  primaryClass  = {cs.LG},
  abstract      = {We model zebrafish swimming \\& find three gaits.}
}

@article{nieve2024glacier,
  title   = {Glacier melt forecasting},
  author  = {Carla Nieve},
  journal = {Journal of Glaciology},
  doi     = {10.1000/glacier.1}
}
"""


def _said(response: Any) -> str:
    """The page's text as a reader sees it: tags dropped, entities decoded, whitespace collapsed."""
    text = re.sub(r"<[^>]+>", "", response.text)
    return " ".join(html.unescape(text).split())


def _papers(app: App) -> int:
    return app.core.store.stats().papers


def _upload(
    client: TestClient,
    name: str,
    content: bytes,
    *,
    csrf: str | None = "page",
    headers: dict[str, str] | None = None,
) -> Any:
    """Post ``content`` as the upload form does (the token from the import page unless told otherwise)."""
    data: dict[str, str] = {}
    if csrf == "page":
        data["csrf_token"] = csrf_from(client.get("/admin/import", headers=HTML).text)
    elif csrf is not None:
        data["csrf_token"] = csrf
    return client.post(
        "/admin/import", data=data, files={"file": (name, content)}, headers={**HTML, **(headers or {})}
    )


@pytest.fixture(autouse=True)
def _no_leftovers(app: App) -> Iterator[None]:
    yield
    spool = app.settings.data_dir / "uploads"
    assert not spool.exists() or list(spool.iterdir()) == [], "an upload's temporary folder was left"


def test_a_jsonl_upload_is_imported_and_searchable_at_once(admin: TestClient, app: App) -> None:
    records = [
        rec("2501.00101", daily_date="2025-01-06", upvotes=5),
        rec("2501.00102", title="Glacier radar"),
    ]
    before = admin.get("/search", params={"q": "glacier radar"}, headers=HTML)  # opens the site's indexes
    assert "Glacier radar" not in before.text
    got = _upload(admin, "papers.jsonl", jsonl_bytes(records))
    assert got.status_code == 200, got.text
    text = _said(got)
    assert "papers.jsonl (JSONL): 2 papers added, 0 updated, 0 unchanged." in text
    assert _papers(app) == 2
    # the site's keyword index followed the import (nothing is embedded: these are keyword matches)
    found = admin.get("/search", params={"q": "glacier radar"}, headers=HTML)
    assert "Glacier radar" in found.text
    assert "Meaning search covers none of the 2 papers yet" in _said(found)
    # the home page is the day's feed now, not the first-run page
    home = admin.get("/", headers=HTML).text
    assert "Welcome to paperfeed" not in home
    assert "Zebrafish locomotion study 2501.00101" in home
    # the same file again changes nothing (as `paperfeed import` twice)
    again = _upload(admin, "papers.jsonl", jsonl_bytes(records))
    assert "0 papers added, 0 updated, 2 unchanged" in _said(again)


def test_a_gzip_jsonl_upload(admin: TestClient, app: App) -> None:
    got = _upload(admin, "papers.jsonl.gz", jsonl_bytes([rec("2501.00101")], gz=True))
    assert got.status_code == 200, got.text
    assert "papers.jsonl.gz (JSONL (gzip)): 1 paper added" in _said(got)
    assert _papers(app) == 1


def test_a_bibtex_upload_imports_entries_with_an_arxiv_id(admin: TestClient, app: App) -> None:
    got = _upload(admin, "refs.bib", BIB.encode())
    assert got.status_code == 422, got.text
    text = _said(got)
    assert "refs.bib (BibTeX): 1 paper added" in text
    assert "1 record rejected" in text
    assert "refs.bib:12 (nieve2024glacier): id: no arXiv id" in text
    paper = app.core.store.get_paper("2501.00201")
    assert paper is not None
    assert paper.title == "Zebrafish Locomotion with Über-sparse $\\alpha$-Transformers"
    assert paper.authors == ("Ada Fishwick", "Ben Okoro")
    assert paper.abstract == "We model zebrafish swimming & find three gaits."
    assert paper.categories == ("cs.LG",)
    assert paper.published is None  # a bare year is not made into a date
    assert paper.sources.keys() == {"file:refs.bib"}


def test_bad_lines_are_reported_with_their_place_and_the_good_ones_kept(admin: TestClient, app: App) -> None:
    lines = [
        rec("2501.00101"),
        b'{"id": "2501.00102", "title": ',
        rec("2501.00103", title=None),
        rec("2501.00104"),
    ]
    got = _upload(admin, "mixed.jsonl", jsonl_bytes(lines))
    assert got.status_code == 422
    text = _said(got)
    assert "2 papers added" in text
    assert "2 records rejected" in text
    assert "mixed.jsonl:2: bad JSON" in text
    assert "mixed.jsonl:3 (id 2501.00103): title: missing" in text
    assert "/upload-" not in text
    assert str(app.settings.data_dir) not in text
    assert _papers(app) == 2


def test_a_truncated_gzip_keeps_what_was_read_and_says_where_it_stopped(admin: TestClient, app: App) -> None:
    whole = jsonl_bytes([rec(f"2501.{i:05d}", abstract=f"text {i} " * 40) for i in range(1, 400)], gz=True)
    cut = whole[: len(whole) * 2 // 3]
    got = _upload(admin, "cut.jsonl.gz", cut)
    assert got.status_code == 422
    text = _said(got)
    line = zlib.decompressobj(wbits=31).decompress(cut).count(b"\n") + 1  # the line the file breaks off in
    assert (
        f"Reading stopped early, at cut.jsonl.gz:{line}: the file ends early here (a truncated gzip" in text
    )
    assert f"the valid records of lines 1–{line - 1:,} are imported, nothing from line {line:,} on." in text
    assert f"Rejected records cut.jsonl.gz:{line}: the file ends early here" in text
    assert _papers(app) == line - 1  # what came before the break, and nothing of the line it cut


def test_a_file_over_the_limit_is_refused_and_nothing_imported(admin: TestClient, app: App) -> None:
    limit = app.settings.upload_max_bytes
    records = [rec(f"2501.{i:05d}", abstract="x" * 500) for i in range(1, 400)]
    content = jsonl_bytes(records)
    assert len(content) > limit
    got = _upload(admin, "big.jsonl", content)
    assert got.status_code == 413
    assert "larger than the 65,536 bytes an upload may be" in got.text
    assert _papers(app) == 0


def test_a_chunked_body_over_the_limit_is_cut_off(admin: TestClient, app: App) -> None:
    """No Content-Length to go by: the stream is counted as it arrives."""
    token = csrf_from(admin.get("/admin/import", headers=HTML).text)
    boundary = "pfboundary"
    head = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="csrf_token"\r\n\r\n{token}\r\n'
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.jsonl"\r\n\r\n'
    ).encode()

    def body() -> Iterator[bytes]:
        yield head
        for _ in range(200):  # 200 x 4 KiB: far past the 64 KiB limit
            yield jsonl_bytes([rec("2501.00101", abstract="y" * 4000)])

    got = admin.post(
        "/admin/import",
        content=body(),
        headers={**HTML, "content-type": f"multipart/form-data; boundary={boundary}"},
    )
    assert got.status_code == 413
    assert _papers(app) == 0


@pytest.mark.parametrize(
    ("name", "content", "said"),
    [
        ("paper.pdf", b"%PDF-1.7\n%binary", "it is a PDF"),
        ("papers.jsonl", b"id,title\n2501.00101,A paper\n", "it starts with 'id,title"),
        ("papers.zip", b"PK\x03\x04rest", "it is a zip archive"),
        ("papers.jsonl.gz", b"\x1f\x8b\x08\x00garbage", "it looks like gzip but nothing could be read"),
        (
            "bad.gz",
            b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03\xff\xff\xff",
            "it looks like gzip but cannot be",
        ),
    ],
)
def test_a_file_of_the_wrong_type_is_refused(
    admin: TestClient, app: App, name: str, content: bytes, said: str
) -> None:
    got = _upload(admin, name, content)
    assert got.status_code == 415
    text = _said(got)
    assert f"{name}: not a JSONL or BibTeX file ({said}" in text
    assert "Nothing was imported" in text
    assert _papers(app) == 0


def test_an_empty_file_or_no_file_is_a_400(admin: TestClient, app: App) -> None:
    empty = _upload(admin, "empty.jsonl", b"")
    assert empty.status_code == 400
    assert "empty.jsonl is empty" in empty.text
    token = csrf_from(admin.get("/admin/import", headers=HTML).text)
    none = admin.post(
        "/admin/import", data={"csrf_token": token}, files={"other": ("x.txt", b"x")}, headers=HTML
    )
    assert none.status_code == 400
    assert "holds no file" in none.text
    form = admin.post("/admin/import", data={"csrf_token": token}, headers=HTML)  # urlencoded, no file
    assert form.status_code == 415
    assert _papers(app) == 0


def test_without_the_csrf_token_nothing_is_imported(admin: TestClient, app: App) -> None:
    content = jsonl_bytes([rec("2501.00101")])
    missing = _upload(admin, "papers.jsonl", content, csrf=None)
    assert missing.status_code == 403
    assert "security token of this form is missing" in missing.text
    forged = _upload(admin, "papers.jsonl", content, csrf="forged-token")
    assert forged.status_code == 403
    assert "out of date" in forged.text
    bad_header = _upload(admin, "papers.jsonl", content, csrf=None, headers={"X-CSRF-Token": "forged"})
    assert bad_header.status_code == 403
    cross = _upload(admin, "papers.jsonl", content, headers={"origin": "https://evil.example"})
    assert cross.status_code == 403
    assert "Cross-site request refused" in cross.text
    assert _papers(app) == 0


def test_the_token_in_the_header_works_too(admin: TestClient, app: App) -> None:
    token = csrf_from(admin.get("/admin/import", headers=HTML).text)
    got = _upload(
        admin, "p.jsonl", jsonl_bytes([rec("2501.00101")]), csrf=None, headers={"X-CSRF-Token": token}
    )
    assert got.status_code == 200
    assert _papers(app) == 1


def test_only_administrators_may_upload(new_client: Callable[[], TestClient], app: App) -> None:
    content = jsonl_bytes([rec("2501.00101")])
    anonymous = new_client()
    token = csrf_from(anonymous.get("/signin", headers=HTML).text)
    got = anonymous.post(
        "/admin/import", data={"csrf_token": token}, files={"file": ("p.jsonl", content)}, headers=HTML
    )
    assert got.status_code == 303
    assert got.headers["location"].startswith("/signin?next=")
    assert anonymous.get("/admin/import", headers=HTML).headers["location"] == "/signin?next=/admin/import"
    reader = new_client()
    sign_in_as(reader, app, "reader@example.org")
    token = csrf_from(reader.get("/account", headers=HTML).text)
    got = reader.post(
        "/admin/import", data={"csrf_token": token}, files={"file": ("p.jsonl", content)}, headers=HTML
    )
    assert got.status_code == 403
    assert "Only administrators" in got.text
    assert reader.get("/admin/import", headers=HTML).status_code == 403
    assert _papers(app) == 0


def test_a_script_with_an_admin_token_gets_json(new_client: Callable[[], TestClient], app: App) -> None:
    admin_user = app.readers.accounts.store.user_by_email("ops@example.org")
    if admin_user is None:
        app.readers.accounts.sign_up("ops@example.org", None, None, client="t", base_url="http://testserver")
    app.readers.accounts.set_role("ops@example.org", "admin")
    _, token = app.readers.accounts.create_api_token(
        app.readers.accounts.user_by_email("ops@example.org"), "uploads"
    )
    script = new_client()
    content = jsonl_bytes([rec("2501.00101"), b"not json"])
    got = script.post(
        "/admin/import",
        files={"file": ("p.jsonl", content)},
        headers={"authorization": f"Bearer {token}", "accept": "application/json"},
    )
    assert got.status_code == 422
    assert got.json() == {
        "file": "p.jsonl",
        "format": "jsonl",
        "gzip": False,
        "added": 1,
        "updated": 0,
        "unchanged": 0,
        "rejected": 1,
        "rejects": [{"where": "p.jsonl:2", "field": None, "reason": got.json()["rejects"][0]["reason"]}],
    }
    assert got.json()["rejects"][0]["reason"].startswith("bad JSON")


def test_the_uploaded_name_is_cleaned(admin: TestClient, app: App) -> None:
    got = _upload(admin, "..\\..\\etc/papers<script>.jsonl", jsonl_bytes([rec("2501.00101")]))
    assert got.status_code == 200
    paper = app.core.store.get_paper("2501.00101")
    assert paper is not None
    (source,) = paper.sources
    assert source == "file:papers_script_.jsonl"
    assert not (Path(app.settings.data_dir).parent / "etc").exists()


def test_gzip_content_is_recognised_whatever_the_name(admin: TestClient, app: App) -> None:
    got = _upload(admin, "download", gzip.compress(BIB.encode()))
    assert got.status_code == 422  # the entry without an arXiv id
    assert "download (BibTeX (gzip)): 1 paper added" in _said(got)
