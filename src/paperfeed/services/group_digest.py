"""A reading group's weekly digest, through the digest send ledger (docs/digests.md, docs/groups.md).

Once a week (``PAPERFEED_GROUP_DIGEST_WEEKDAY`` at ``PAPERFEED_GROUP_DIGEST_HOUR`` UTC) the digests job
composes, for every member who asked for it, one ledger row keyed by (group, member, ISO week): the next
session, the queue's newest and most voted papers and the new matches of the group's searches, without
what the group or the member mutes. The key is a unique constraint, so composing again — another run, a
restart, a second node — adds nothing; the rows are then sent by the digest sender with everything its
ledger guarantees (claimed before SMTP, ``handed`` before the dot, never sent twice after a crash).

A row is only mailed if its reader is still a member who wants the digest when it goes out; otherwise it
is cancelled. Every mail carries RFC 8058 one-click unsubscribe headers whose signed link turns the
member's digest off.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from urllib.parse import quote, urlsplit

from paperfeed.domain.digest import Pick, Section, compose
from paperfeed.domain.digest_ledger import GroupDigestLedger, LedgerEntry, NewGroupDigest
from paperfeed.domain.digest_links import InvalidToken, LinkSigner
from paperfeed.domain.groups import GroupRecords, GroupSession
from paperfeed.domain.mail import OutgoingMail
from paperfeed.services.alerts import AlertSearch
from paperfeed.services.mutes import MuteService
from paperfeed.services.visible import VisiblePapers

__all__ = ["GroupDigestSettings", "GroupDigests", "group_period", "group_slot"]

log = logging.getLogger("paperfeed.digest")

NEXT, NEW, VOTED, MATCHES = Section.for_you, Section.trending, Section.authors, Section.alerts  # tags only:
# a group digest's sections are told apart by their titles, fixed in the ledger row like its papers


@dataclass(frozen=True)
class GroupDigestSettings:
    base_url: str
    weekday: int  # PAPERFEED_GROUP_DIGEST_WEEKDAY (0 = Monday)
    hour: int  # PAPERFEED_GROUP_DIGEST_HOUR, UTC
    per_section: int = 5
    site_name: str = "paperfeed"


def group_slot(now: datetime, weekday: int, hour: int) -> datetime:
    """The latest weekly send moment at or before ``now`` (UTC)."""
    now = now.astimezone(UTC)
    day = now.date() - timedelta(days=(now.weekday() - weekday) % 7)
    slot = datetime(day.year, day.month, day.day, hour, tzinfo=UTC)
    return slot if slot <= now else slot - timedelta(days=7)


def group_period(slot: datetime) -> str:
    year, week, _ = slot.isocalendar()
    return f"{year}-W{week:02d}"


@dataclass
class GroupDigests:
    groups: GroupRecords
    ledger: GroupDigestLedger
    papers: VisiblePapers  # existing, not hidden by an admin
    alerts: AlertSearch  # a group search's new papers: a search within the week
    mutes: MuteService  # the group's and each member's mute rules
    signer: LinkSigner
    settings: GroupDigestSettings
    clock: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))

    # -- composing -----------------------------------------------------------------------------------------

    def compose_due(self, *, dry_run: bool = False) -> int:
        """Add this week's row for every member who wants the digest and has none yet; how many added."""
        slot = group_slot(self.clock(), self.settings.weekday, self.settings.hour)
        period = group_period(slot)
        added = 0
        for group_id in self.groups.groups_with_digest():
            members = self.groups.member_emails(group_id, digest_only=True)
            settled = self.ledger.settled_group_periods(group_id, period)
            bouncing = self.ledger.bounced([email for _, email in members])
            todo = [(uid, email) for uid, email in members if uid not in settled and email not in bouncing]
            if not todo:
                continue
            parts = self._parts(group_id, slot)
            group_muted = self.mutes.group_filter(group_id)
            new = []
            for user_id, email in todo:
                muted = self.mutes.filter_for(user_id)
                hidden = {p.paper.id for _, _, picks in parts for p in picks if group_muted.muted(p.paper)}
                hidden |= {p.paper.id for _, _, picks in parts for p in picks if muted.muted(p.paper)}
                digest = compose(parts, (), cap=30, per_section=self.settings.per_section, hidden=hidden)
                new.append(NewGroupDigest(group_id, user_id, period, slot, email, digest))
            if not dry_run:
                added += self.ledger.add_group_digests(new, self.clock())
        return added

    def _parts(self, group_id: int, slot: datetime) -> list[tuple[Section, str, list[Pick]]]:
        week_ago = slot - timedelta(days=7)
        upcoming = self.groups.sessions(group_id, after=slot, limit=1)
        queue = self.groups.queue(group_id)
        wanted = [e.paper_id for e in queue] + [s.paper_id for s in upcoming]
        found = self.papers.get(wanted)
        parts: list[tuple[Section, str, list[Pick]]] = []
        if upcoming and upcoming[0].paper_id in found:
            session = upcoming[0]
            parts.append((NEXT, _session_title(session), [Pick(found[session.paper_id], "presented then")]))
        voted = sorted(
            (e for e in queue if e.votes > 0 and e.paper_id in found), key=lambda e: (-e.votes, e.added_at)
        )
        parts.append(
            (
                VOTED,
                "Most voted for the next session",
                [Pick(found[e.paper_id], f"{e.votes} vote{'s' if e.votes != 1 else ''}") for e in voted],
            )
        )
        fresh = [e for e in queue if e.added_at >= week_ago and e.paper_id in found]
        parts.append(
            (
                NEW,
                "New in the queue",
                [Pick(found[e.paper_id], _added(e.added_by_name, e.note)) for e in fresh],
            )
        )
        queued = set(wanted)
        matched: list[Pick] = []
        for search in self.groups.searches(group_id):
            for paper in self.alerts.between(search.query, week_ago, slot, 20):
                if paper.id not in queued:
                    matched.append(Pick(paper, f"matches “{search.query}”"))
        parts.append((MATCHES, "New papers matching the group's searches", matched))
        return parts

    # -- sending (called by the digest sender for a group row) ---------------------------------------------

    def mail(self, entry: LedgerEntry) -> OutgoingMail | None:
        """The mail of a group row; None when its reader no longer wants it (left, removed, turned off)."""
        if entry.group_id is None or entry.user_id is None:
            return None
        member = self.groups.membership(entry.group_id, entry.user_id)
        group = self.groups.group(entry.group_id)
        if member is None or not member.digest or group is None:
            return None
        site = self.settings.base_url.rstrip("/")
        token = self.signer.sign("group-unsubscribe", entry.group_id, str(entry.user_id))
        unsubscribe = f"{site}/groups/digest/unsubscribe?t={quote(token)}"
        papers = self.papers.get(entry.digest.paper_ids)
        lines = [f"This week in “{group.name}” ({entry.period}):", ""]
        for section in entry.digest.sections:
            lines += [section.heading(), "-" * min(60, len(section.heading()))]
            for item in section.entries:
                paper = papers.get(item.paper_id)
                if paper is None:
                    continue
                title = " ".join(paper.title.split())
                lines.append(f"* {title}" + (f" ({item.why})" if item.why else ""))
                lines.append(f"  {site}/papers/{paper.id}")
            lines.append("")
        lines += [
            f"The group: {site}/groups/{entry.group_id}",
            f"Stop this weekly digest: {unsubscribe}",
        ]
        host = urlsplit(site).hostname or "paperfeed"
        return OutgoingMail(
            to=entry.email,
            subject=f"{group.name}: the week in your reading group",
            text="\n".join(lines),
            headers={
                "List-Unsubscribe": f"<{unsubscribe}>",
                "List-Unsubscribe-Post": "List-Unsubscribe=One-Click",
                "List-Id": f"paperfeed group {entry.group_id} <group-{entry.group_id}.{host}>",
                "Message-ID": f"<digest-{entry.id}@{host}>",
                "Auto-Submitted": "auto-generated",
                "Precedence": "bulk",
            },
        )

    def check_unsubscribe(self, token: str) -> None:
        """Raise :class:`InvalidToken` unless ``token`` is a good stop link (the page before the button)."""
        self.signer.verify("group-unsubscribe", token)

    def unsubscribe(self, token: str) -> tuple[int, int]:
        """Turn off the digest a signed link names; (group id, user id). InvalidToken for a bad link."""
        group_id, user = self.signer.verify("group-unsubscribe", token)
        if not user.isdigit():
            raise InvalidToken("this link is incomplete or damaged")
        user_id = int(user)
        if self.groups.membership(group_id, user_id) is not None:
            self.groups.set_digest(group_id, user_id, False)
        return group_id, user_id


def _session_title(session: GroupSession) -> str:
    return f"Next session: {session.starts_at:%A %d %B, %H:%M} UTC, presented by {session.presenter_name}"


def _added(name: str, note: str) -> str:
    first = " ".join(note.split())[:120]
    return f"added by {name}" + (f": {first}" if first else "")
