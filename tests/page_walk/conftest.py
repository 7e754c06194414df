"""One seeded instance for the walk over every page (tests/page_walk/test_every_page.py).

The seeded instance holds real papers (a slice of ../shared/data/hf_daily.jsonl.gz: real titles, author
lists and abstracts, so a long word or name shows up as it would) and the hostile papers of
tests/web_pages/data (markup, RTL text, long strings), embedded by the fake embedder through the real
indexing job, topics built by the App's own TopicService, and everything a page needs to show more than
its empty state: a reader with a library (tags, a public collection, a note, a dismissed paper, a followed
author, a saved search), a vote and a comment, picked topics, a mute rule, a digest subscription, an
administrator, and a reading group with a queue, a session with notes and an open invitation. The
:class:`Seeded` it yields names the ids and tokens the walk's URLs need. The data folder is built once
per run (xdist workers share it, each with a server of its own).
"""

from __future__ import annotations

import fcntl
import gzip
import os
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlsplit

import orjson
import pytest

from paperfeed.adapters.sources.jsonl_file import JsonlFileSource
from paperfeed.bootstrap import App, build_app
from paperfeed.domain.accounts import User
from paperfeed.domain.digest import Preferences
from paperfeed.settings import Settings
from tests.community.conftest import add_reader
from tests.support.failing_routes import add_failing_routes
from tests.support.live_server import live_server

HOSTILE = Path(__file__).resolve().parents[1] / "web_pages" / "data" / "hostile.jsonl"
MONTH = "2026-05"  # the slice's papers: published that month (703 in the file), every third one
MONTH_WEEK = "2026-W20"
READER_NAME = "Ximena Quispe-Huamán"
ADMIN_NAME = "Maximiliana Administratorova-Longname"  # a long name: the header must give way, not wrap


@dataclass(frozen=True)
class Seeded:
    """The live URL, the sessions of a reader and an administrator, and what the walk's URLs name."""

    url: str
    reader_session: str
    admin_session: str
    invitee_session: str  # a reader invited to the group, who has not answered yet
    paper: str  # a paper with a vote, a comment and a note
    day: str  # a day with listings, YYYY-MM-DD
    week: str  # its ISO week, YYYY-Www
    month: str  # YYYY-MM
    topic: int  # a fine topic
    author: str
    collection: int  # a public tag of the reader
    search: int  # a saved search of the reader
    comment: int  # the reader's comment
    group: int  # a group the reader owns (the administrator is a member)
    session: int  # a session of that group, with notes
    invitation: str  # an open invitation's token (to a third address)
    digest_preferences: str  # a digest's signed preferences link, path and query
    digest_unsubscribe: str  # … its unsubscribe link


def _slice(hf_path: Path, out: Path) -> None:
    with gzip.open(hf_path, "rb") as fh:
        chosen = [r for r in map(orjson.loads, fh) if str(r.get("published", ""))[:7] == MONTH]
    chosen.sort(key=lambda r: r["id"])
    out.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in chosen[::3]))


# Anonymous searches a minute before a 429: the walk's anonymous searches are two (one URL at two widths),
# then the error pages' walk spends the rest and meets the limit.
SEARCHES_A_MINUTE = 2


def walk_settings(folder: Path, **extra: object) -> Settings:
    return Settings(
        data_dir=folder,
        database_url=None,
        embedding_backend="fake",
        search_rate_per_minute=SEARCHES_A_MINUTE,
        topics_min_papers=30,
        topics_k=6,
        topics_layout="pca",  # UMAP's first fit in a process JIT-compiles for a minute: not what is tested
        **extra,  # type: ignore[arg-type]
    )


def _import(app: App, path: Path) -> None:
    summary = app.sources.ingest.run(JsonlFileSource(path, batch_size=app.settings.batch_size))
    assert summary.rejected == 0, summary.rejects[:3]


def _seed(app: App, base_url: str) -> dict[str, object]:
    """Everything beyond the papers, through the services a reader's clicks would call."""
    reader: User = add_reader(app, "ximena@example.org", READER_NAME)
    admin: User = add_reader(app, "admin@example.org", ADMIN_NAME, role="admin")
    feeds = app.catalogue.feeds
    week = feeds.week(MONTH_WEEK)  # the slice's busiest week
    papers = [item.paper.id for item in week.items]
    assert len(papers) >= 6, papers
    day = week.items[0].day
    paper = papers[0]
    library = app.readers.library
    library.save(reader.id, paper, ["Saved", "Reading list"])
    library.save(reader.id, papers[1], ["Reading list"])
    collection = library.create_tag(reader.id, "Diffusion papers for the lab", public=True)
    library.save(reader.id, papers[2], [collection.name])
    library.set_note(reader.id, paper, "Read §3 first: the **ablation** is what matters.")
    library.set_dismissed(reader.id, papers[3])
    detail = feeds.paper(paper)
    assert detail is not None
    author = detail.paper.authors[0]
    library.follow(reader.id, author)
    search = library.add_search(reader.id, "Diffusion", "diffusion")
    community = app.readers.community
    community.upvote(reader, paper)
    comment = community.add_comment(reader, paper, "A clear baseline; the `FID` numbers hold up.")
    app.readers.mutes.add(reader.id, "word", "blockchain")
    topics = app.catalogue.topics.records.topics()
    assert topics, "the topics were not built"
    app.catalogue.topic_picks.pick(reader.id, topics[0].id)

    groups = app.readers.groups
    group = groups.create(reader.id, "Generative models reading group", "Tuesdays, room 2.14")
    mail = groups.invite(reader.id, group.id, admin.email, base_url=base_url, client="seed")
    token = _token(mail.text, "/groups/invitations/")
    groups.accept(admin.id, admin.email, token)
    invitee = add_reader(app, "olu@example.org", "Olúwaseun Adébáyọ̀")
    third = groups.invite(reader.id, group.id, invitee.email, base_url=base_url, client="seed")
    invitation = _token(third.text, "/groups/invitations/")
    for pid in papers[4:6]:
        groups.queue_add(reader.id, group.id, pid, "Worth an hour")
    groups.vote(admin.id, group.id, papers[4])
    session = groups.schedule(reader.id, group.id, datetime.now(UTC) + timedelta(days=3), admin.id, None)
    groups.set_notes(reader.id, group.id, session.id, "## Notes\n\n- the method section")
    groups.set_digest(reader.id, group.id, True)

    subscriptions = app.digests.subscriptions
    result = subscriptions.subscribe(
        reader.email, Preferences(), base_url=base_url, client="seed", user=reader
    )
    assert result.subscription is not None, result
    links = subscriptions.links(result.subscription, base_url)
    return {
        "reader_session": app.readers.accounts.create_session(reader).session,
        "admin_session": app.readers.accounts.create_session(admin).session,
        "invitee_session": app.readers.accounts.create_session(invitee).session,
        "paper": paper,
        "day": day.isoformat(),
        "week": f"{day.isocalendar().year}-W{day.isocalendar().week:02d}",
        "month": f"{day:%Y-%m}",
        "topic": topics[0].id,
        "author": author,
        "collection": collection.id,
        "search": search.id,
        "comment": comment.id,
        "group": group.id,
        "session": session.id,
        "invitation": invitation,
        "digest_preferences": _local(links.preferences),
        "digest_unsubscribe": _local(links.unsubscribe),
    }


def _token(text: str, prefix: str) -> str:
    found = re.search(re.escape(prefix) + r"(\S+)", text)
    assert found, text
    return found.group(1)


def _local(link: str) -> str:
    parts = urlsplit(link)
    return parts.path + (f"?{parts.query}" if parts.query else "")


SEED_URL = "http://seed.invalid"  # the base of links made while seeding (their paths and tokens are used)


@pytest.fixture(scope="session")
def walk_data(tmp_path_factory: pytest.TempPathFactory, hf_path: Path) -> tuple[Settings, dict[str, object]]:
    """The seeded data folder, built once per run: the first xdist worker builds it under a lock, the
    other reuses it (each serves it from a server of its own)."""
    base = tmp_path_factory.getbasetemp()
    root = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    folder = root / "page-walk"
    settings = walk_settings(folder / "data")
    made = folder / "seeded.json"
    with (root / "page-walk.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not made.exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir(parents=True)
            _slice(hf_path, folder / "papers.jsonl")
            app = build_app(settings.model_copy(update={"base_url": SEED_URL}))
            try:
                _import(app, folder / "papers.jsonl")
                _import(app, HOSTILE)
                app.indexes.indexer.current().run()
                app.catalogue.topics.build()
                made.write_bytes(orjson.dumps(_seed(app, SEED_URL)))
            finally:
                app.close()
    return settings, orjson.loads(made.read_bytes())


@pytest.fixture(scope="module")
def seeded(walk_data: tuple[Settings, dict[str, object]]) -> Iterator[Seeded]:
    settings, made = walk_data
    with live_server(settings, extend=add_failing_routes) as url:
        yield Seeded(url=url, **made)  # type: ignore[arg-type]
