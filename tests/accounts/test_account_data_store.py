"""The reader-data store on both backends: the export holds all of a reader's rows and no secret, and
deletion removes every row of that reader, in every table, while leaving everyone else's alone."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime, timedelta
from typing import Any

from sqlalchemy import func, select

from paperfeed.adapters.sources.jsonl_file import JsonlFileSource
from paperfeed.adapters.store import SqlPaperStore
from paperfeed.adapters.store.account_data import SqlReaderDataStore
from paperfeed.adapters.store.accounts import SqlAccountStore
from paperfeed.adapters.store.community import SqlCommunityStore
from paperfeed.adapters.store.digests import SqlDigestStore
from paperfeed.adapters.store.groups import SqlGroupStore
from paperfeed.adapters.store.library import SqlLibraryStore
from paperfeed.adapters.store.mutes import SqlMuteStore
from paperfeed.adapters.store.schema import metadata
from paperfeed.adapters.store.schema_accounts import hidden_papers
from paperfeed.adapters.store.schema_community import paper_comments, paper_submissions
from paperfeed.adapters.store.schema_digests import digest_sent_papers, digests, mail_bounces
from paperfeed.adapters.store.schema_groups import group_searches
from paperfeed.adapters.store.topic_picks import SqlTopicPicks
from paperfeed.domain.digest import (
    Digest,
    DigestEntry,
    DigestSection,
    Preferences,
    Section,
    SubscriptionStatus,
)
from paperfeed.domain.digest_ledger import NewDigest, NewGroupDigest
from paperfeed.domain.mutes import check_rule
from paperfeed.domain.search import SearchFilters
from paperfeed.services.ingest import IngestService
from tests.support.defaults import DEFAULTS

from .conftest import PAPER_IDS, PAPERS, add_topic

NOW = datetime(2026, 1, 5, 12, 0, tzinfo=UTC)
P1, P2, P3, P4 = PAPER_IDS


def _reader(store: SqlPaperStore, email: str, *, other_paper: str) -> dict[str, Any]:
    """An account using every feature, through the areas' own stores. Returns what it holds."""
    accounts = SqlAccountStore(store.engine)
    user = accounts.create_user(email, "$argon2id$secret-hash-of-" + email, email.split("@")[0], NOW)
    assert user is not None
    uid = user.id
    accounts.mark_verified(uid, NOW)
    accounts.add_session(f"session-hash-{uid}", uid, NOW, NOW + timedelta(days=30))
    accounts.add_token(uid, "laptop", f"token-hash-{uid}", f"pf_pre{uid}", NOW)
    accounts.add_link(f"link-hash-{uid}", uid, "reset", NOW, NOW + timedelta(hours=1))

    library = SqlLibraryStore(store.engine)
    library.save(uid, [P1, other_paper], ["Reading list", "Fish"])
    library.set_read(uid, P1, True)
    library.set_dismissed(uid, P3, True)
    library.set_note(uid, P1, "**Gaits**: three of them\n\n- sparse")
    library.follow(uid, "Ada Fishwick")
    search = library.add_search(
        uid, "glaciers", "glacier melt", SearchFilters(categories=("physics.geo-ph",))
    )
    assert search is not None

    community = SqlCommunityStore(store.engine)
    assert community.add_vote(uid, P1, NOW)
    assert community.add_vote(uid, other_paper, NOW)
    comment = community.add_comment(uid, P1, f"a comment by {email}", NOW, per_hour=30)
    assert community.add_submission(uid, other_paper, date(2026, 1, 5), NOW, cap=10) is not None

    # Reading groups (docs/groups.md): two of their own, a queue, a vote, an invitation, a session.
    groups = SqlGroupStore(store.engine)
    own = groups.create_group(uid, f"{email}'s group", "", f"cal-own-{uid}")
    alone = groups.create_group(uid, f"{email} alone", "", f"cal-alone-{uid}")
    groups.add_to_queue(own.id, P1, uid, "read this", NOW)
    groups.vote(own.id, uid, P1, NOW)
    groups.add_invitation(own.id, "x@example.org", f"inv-{uid}", uid, NOW, NOW + timedelta(days=7))
    groups.accept_invitation(f"inv-{uid}", uid, NOW, f"cal-again-{uid}")  # already a member: no change
    session = groups.add_session(own.id, NOW + timedelta(days=1), uid, other_paper, NOW)
    groups.set_session_notes(session.id, "notes", uid, NOW)
    with store.engine.begin() as conn:
        conn.execute(
            group_searches.insert().values(group_id=alone.id, query="q", created_by=uid, created_at=NOW)
        )
    SqlMuteStore(store.engine).add(("reader", uid), check_rule("word", "glacier"), NOW, cap=200)
    weekly = NewGroupDigest(own.id, uid, "2026-W02", NOW, email, Digest(()))
    assert SqlDigestStore(store.engine).add_group_digests([weekly], NOW) == 1

    # The account's digest goes to another address of theirs (linked by user id, not by address).
    digest_store = SqlDigestStore(store.engine)
    alias = email.replace("@", "+papers@")
    sub = digest_store.create_subscription(
        alias, Preferences(), status=SubscriptionStatus.active, user_id=uid, now=NOW
    ).subscription
    digest = Digest((DigestSection(Section.trending, (DigestEntry(P2, "trending"),)),))
    assert digest_store.add_digests([NewDigest(sub.id, "2026-01-05", NOW, alias, digest)], NOW) == 1
    digest_store.add_bounce(email, "550 no such mailbox", NOW)
    assert SqlTopicPicks(store.engine).pick(uid, 7, NOW)  # a topic picked for "For you" (issue #17)
    return {
        "user": user,
        "comment": comment.id,
        "subscription": sub.id,
        "feed_token": library.search_feed_token(search.id),
    }


def _user_rows(store: SqlPaperStore, user_id: int) -> dict[str, int]:
    """Rows per table that refer to ``user_id`` through any column pointing at users.id."""
    counts: dict[str, int] = {}
    with store.engine.connect() as conn:
        for table in metadata.sorted_tables:
            for column in table.columns:
                refs = {fk.target_fullname for fk in column.foreign_keys}
                if (
                    "users.id" in refs
                    or column.name == "user_id"
                    or (table.name, column.name) == ("users", "id")
                ):
                    key = f"{table.name}.{column.name}"
                    counts[key] = conn.execute(
                        select(func.count()).select_from(table).where(column == user_id)
                    ).scalar_one()
    return counts


def _count(store: SqlPaperStore, table: Any, *where: Any) -> int:
    with store.engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(table).where(*where)).scalar_one())


def _setup(store: SqlPaperStore) -> tuple[dict[str, Any], dict[str, Any]]:
    summary = IngestService(store).run(JsonlFileSource(PAPERS, batch_size=DEFAULTS.batch_size))
    assert summary.rejected == 0
    ann = _reader(store, "ann@example.org", other_paper=P2)
    bob = _reader(store, "bob@example.org", other_paper=P4)
    return ann, bob


def test_deletion_removes_every_row_of_the_reader_and_nothing_else(store: SqlPaperStore) -> None:
    ann, bob = _setup(store)
    ann_id, bob_id = ann["user"].id, bob["user"].id
    community = SqlCommunityStore(store.engine)
    # Ann, an administrator, moderated: she hid Bob's comment and a paper. That moderation stays.
    assert community.set_comment_hidden(bob["comment"], ann_id, NOW)
    assert SqlAccountStore(store.engine).hide_paper(P4, ann_id, "spam", NOW)
    # A digest subscription of Ann's address made before she had an account (no user_id).
    SqlDigestStore(store.engine).create_subscription(
        "ann@example.org", Preferences(), status=SubscriptionStatus.pending, user_id=None, now=NOW
    )

    before_ann = _user_rows(store, ann_id)
    before_bob = _user_rows(store, bob_id)
    # Every table that refers to a reader is filled for both, so "zero after" means something.
    unfilled = {k for k, n in before_ann.items() if n == 0}
    assert unfilled == set(), unfilled
    assert community.vote_counts([P1, P2, P4]) == {P1: 2, P2: 1, P4: 1}
    assert community.comment_counts([P1]) == {P1: 1}  # Ann's (Bob's is hidden)

    deleted = SqlReaderDataStore(store.engine).delete_reader(ann_id)

    assert deleted is not None
    after_ann = _user_rows(store, ann_id)
    assert after_ann == dict.fromkeys(before_ann, 0), after_ann
    assert _user_rows(store, bob_id) == {**before_bob, "paper_comments.hidden_by": 0}
    assert deleted.counts["users"] == 1
    assert deleted.counts["paper_upvotes"] == 2
    assert deleted.counts["paper_comments"] == 1
    assert deleted.counts["digest_subscriptions"] == 2
    assert deleted.counts["submissions"] == 1  # detached, not deleted
    assert deleted.counts["moderation"] == 2  # Bob's hidden comment and the hidden paper
    # Counts are counted from rows: they drop by exactly Ann's votes and comment.
    assert community.vote_counts([P1, P2, P4]) == {P1: 1, P4: 1}
    assert community.comment_counts([P1]) == {}  # Ann's is gone, Bob's still hidden
    # Kept without her: the submission of P2 and the moderation, now anonymous.
    assert _count(store, paper_submissions, paper_submissions.c.paper_id == P2) == 1
    assert (
        _count(
            store,
            paper_comments,
            paper_comments.c.id == bob["comment"],
            paper_comments.c.hidden_at.is_not(None),
        )
        == 1
    )
    assert _count(store, hidden_papers, hidden_papers.c.paper_id == P4) == 1
    # Digest rows found by subscription or address: Ann's gone, Bob's there.
    assert _count(store, digests, digests.c.email == "ann+papers@example.org") == 0
    assert _count(store, digests, digests.c.email == "bob+papers@example.org") == 1
    assert _count(store, digest_sent_papers, digest_sent_papers.c.subscription_id == ann["subscription"]) == 0
    assert _count(store, digest_sent_papers, digest_sent_papers.c.subscription_id == bob["subscription"]) == 1
    assert _count(store, mail_bounces, mail_bounces.c.email == "ann@example.org") == 0
    assert _count(store, mail_bounces, mail_bounces.c.email == "bob@example.org") == 1
    digest_store = SqlDigestStore(store.engine)
    assert digest_store.subscription_by_email("ann@example.org") is None  # by address
    assert digest_store.subscription_by_email("ann+papers@example.org") is None  # by account
    assert digest_store.subscription_by_email("bob+papers@example.org") is not None
    # Deleting again finds nothing; Bob still signs in.
    assert SqlReaderDataStore(store.engine).delete_reader(ann_id) is None
    assert SqlAccountStore(store.engine).session_user(f"session-hash-{bob_id}", NOW) is not None


def test_export_holds_the_readers_rows_and_no_secret(store: SqlPaperStore) -> None:
    ann, _bob = _setup(store)
    SqlAccountStore(store.engine).hide_paper(P2, None, "withdrawn", NOW)
    add_topic(store, 3, "Zebrafish gaits")
    later = NOW + timedelta(minutes=5)
    assert SqlTopicPicks(store.engine).pick(ann["user"].id, 3, later)

    export = SqlReaderDataStore(store.engine).reader_export(ann["user"].id)

    assert export is not None
    docs = export.documents
    text = json.dumps(docs)
    for secret in (
        "secret-hash-of",
        "session-hash-",
        "token-hash-",
        "pf_pre",
        "link-hash-",
        ann["feed_token"],
    ):
        assert secret not in text, secret
    assert "bob@example.org" not in text  # nothing of Bob's
    groups = docs["groups"]
    assert {m["group"] for m in groups["memberships"]} == {"ann@example.org's group", "ann@example.org alone"}
    assert groups["queued"] == [
        {"group": "ann@example.org's group", "paperId": P1, "note": "read this", "addedAt": NOW.isoformat()}
    ]
    assert groups["votes"] == [{"group": "ann@example.org's group", "paperId": P1}]
    assert groups["muteRules"] == [{"kind": "word", "value": "glacier"}]
    assert "cal-own-" not in text  # a calendar token is a secret
    account = docs["account"]
    assert account["email"] == "ann@example.org"
    assert account["hasPassword"] is True
    assert account["emailConfirmed"] is True
    assert account["apiTokens"] == [{"name": "laptop", "createdAt": NOW.isoformat(), "lastUsedAt": None}]
    assert len(account["sessions"]) == 1
    library = docs["library"]
    assert {t["name"] for t in library["tags"]} == {"Reading list", "Fish"}
    by_id = {p["paperId"]: p for p in library["papers"]}
    assert set(by_id) == {P1, P2, P3}
    assert by_id[P1]["saved"]
    assert by_id[P1]["readAt"] is not None
    assert {t["tag"] for t in by_id[P1]["tags"]} == {"Reading list", "Fish"}
    assert by_id[P1]["note"]["markdown"] == "**Gaits**: three of them\n\n- sparse"
    assert by_id[P1]["title"] == "Zebrafish locomotion with sparse transformers"
    assert by_id[P2]["title"] is None  # hidden by an administrator: listed by id only
    assert not by_id[P3]["saved"]
    assert by_id[P3]["notInterestedAt"] is not None
    assert library["notInterested"] == [P3]
    assert library["followedAuthors"][0]["name"] == "Ada Fishwick"
    assert library["savedSearches"][0]["query"] == "glacier melt"
    assert library["savedSearches"][0]["filters"]["categories"] == ["physics.geo-ph"]
    assert export.saved_paper_ids == (P1,)  # P2 is hidden
    assert [c["markdown"] for c in docs["comments"]] == ["a comment by ann@example.org"]
    assert {u["paperId"] for u in docs["upvotes"]} == {P1, P2}
    assert [s["paperId"] for s in docs["submissions"]] == [P2]
    [sub] = docs["subscriptions"]
    assert sub["email"] == "ann+papers@example.org"
    assert sub["linkedToAccount"]
    assert sub["status"] == "active"
    assert [d["period"] for d in sub["digests"]] == ["2026-01-05"]
    # The topics picked for "For you", oldest first: topic 7 is gone (a rebuild removed it; the pick is
    # followed to its successor when next read), so it has no label.
    assert docs["topics"] == [
        {"topicId": 7, "label": None, "pickedAt": NOW.isoformat()},
        {"topicId": 3, "label": "Zebrafish gaits", "pickedAt": later.isoformat()},
    ]
    assert SqlReaderDataStore(store.engine).reader_export(10_000) is None
