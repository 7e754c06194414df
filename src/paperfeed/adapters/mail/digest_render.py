"""Render digest and subscription mail from the Jinja templates in ``templates/`` beside this module.

Every mail is multipart: an HTML part (inline CSS, no scripts or external resources, so it reads the same
in webmail and desktop clients and leaks nothing when opened) and a plain-text part with the same
content. The one kind of image is the "Rising this week" plot: a small PNG drawn here (:mod:`.plot_png`)
and carried inside the message as an inline part the HTML shows by ``cid:``, with alt text.

Every link is absolute (``base_url``), and every digest carries its preferences and one-click unsubscribe
links, plus the ``List-Unsubscribe`` and ``List-Unsubscribe-Post`` headers of RFC 8058.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from urllib.parse import quote, urlencode, urlsplit

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape

from paperfeed.domain.digest import Cadence, Digest, DigestSection, Preferences, zone
from paperfeed.domain.digest_links import LinkSigner
from paperfeed.domain.digest_mail import SubscriptionLinks
from paperfeed.domain.mail import InlineImage, OutgoingMail
from paperfeed.domain.models import Paper
from paperfeed.domain.topic_rising import SHOWN, lift_words, shares_alt
from paperfeed.domain.wording import agree, count

from .plot_png import MAX_PNG_BYTES, bar_png

__all__ = ["JinjaDigestRenderer", "JinjaDigestRenderers"]

TEMPLATES = Path(__file__).resolve().parent / "templates"
_SUMMARY_CHARS = 300
_SPACE = re.compile(r"\s+")
_TEX_DELIMS = re.compile(r"(?<!\\)\$+")

CADENCE_LABELS = {Cadence.daily: "daily", Cadence.weekdays: "weekday", Cadence.weekly: "weekly"}


def _clean(text: str) -> str:
    """One line of readable text: whitespace folded, TeX ``$`` delimiters dropped."""
    return _SPACE.sub(" ", _TEX_DELIMS.sub("", text)).strip()


def _shorten(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0].rstrip(",;:")
    return cut + "…"


def _authors(names: tuple[str, ...]) -> str:
    if len(names) <= 4:
        return ", ".join(names)
    return ", ".join(names[:3]) + f" and {len(names) - 3} more"


@dataclass(frozen=True, slots=True)
class _Item:
    title: str
    url: str
    authors: str
    summary: str
    why: str | None
    meta: str
    summary_label: str | None = None  # whose one-line summary ``summary`` is; None: the abstract, shortened


@dataclass(frozen=True, slots=True)
class _Topic:
    label: str
    url: str
    lift: str  # "5 papers this week, 3.1× its usual share"
    alt: str  # the plot in words
    cid: str | None  # the inline PNG, when there is one


@dataclass(frozen=True, slots=True)
class _Section:
    heading: str
    items: tuple[_Item, ...]
    topics: tuple[_Topic, ...] = ()


class JinjaDigestRenderer:
    """:class:`~paperfeed.domain.digest_mail.DigestRenderer` on Jinja: composed digests and subscription
    events as :class:`OutgoingMail`."""

    def __init__(self, base_url: str, signer: LinkSigner) -> None:
        self.base_url = base_url.rstrip("/")
        self.signer = signer
        self._host = urlsplit(self.base_url).hostname or "localhost"
        self._html = Environment(
            loader=FileSystemLoader(TEMPLATES),
            autoescape=select_autoescape(["html"]),
            undefined=StrictUndefined,
            trim_blocks=False,
        )
        self._text = Environment(
            loader=FileSystemLoader(TEMPLATES), autoescape=False, undefined=StrictUndefined
        )
        for env in (self._html, self._text):  # counts in words: {{ n|count("paper") }} (domain/wording.py)
            env.filters.update(count=count, agree=agree)
        self._plots: dict[tuple[float, ...], bytes] = {}  # one render per distinct plot per renderer

    # -- links --------------------------------------------------------------------------------------

    def links(self, subscription_id: int, nonce: str | None = None) -> SubscriptionLinks:
        def url(path: str, token: str) -> str:
            return f"{self.base_url}{path}?{urlencode({'t': token})}"

        confirm = (
            url("/digest/confirm", self.signer.sign("confirm", subscription_id, nonce)) if nonce else None
        )
        return SubscriptionLinks(
            preferences=url("/digest/preferences", self.signer.sign("preferences", subscription_id)),
            unsubscribe=url("/digest/unsubscribe", self.signer.sign("unsubscribe", subscription_id)),
            confirm=confirm,
        )

    def paper_url(self, paper_id: str) -> str:
        return f"{self.base_url}/papers/{quote(paper_id, safe='/:')}"

    # -- digests ------------------------------------------------------------------------------------

    def period_label(self, prefs: Preferences, slot: datetime) -> str:
        local = slot.astimezone(zone(prefs.timezone))
        if prefs.cadence == Cadence.weekly:
            year, week, _ = local.isocalendar()
            return f"week {week}, {year}"
        return f"{local:%A} {local.day} {local:%B %Y}"

    def digest_mail(
        self,
        *,
        digest_id: int,
        email: str,
        subscription_id: int,
        prefs: Preferences,
        slot: datetime,
        digest: Digest,
        papers: Mapping[str, Paper],
    ) -> OutgoingMail | None:
        """The mail of a composed digest; None when none of its papers exists any more."""
        sections: list[_Section] = []
        images: list[InlineImage] = []
        for section in digest.sections:
            if section.topics:
                sections.append(self._rising(section, digest_id, images))
                continue
            items = tuple(
                self._item(papers[e.paper_id], e.why) for e in section.entries if e.paper_id in papers
            )
            if items:
                sections.append(_Section(section.heading(), items))
        count = sum(len(s.items) for s in sections)
        if not count:
            return None  # a digest whose papers are all gone is not sent for its topics alone
        links = self.links(subscription_id)
        label = self.period_label(prefs, slot)
        noun = "paper" if count == 1 else "papers"
        subject = f"{count} {noun} for {label} · paperfeed"
        lead = next(s for s in sections if s.items)
        context = {
            "subject": subject,
            "preheader": _shorten(f"{lead.heading}: {lead.items[0].title}", 140),
            "heading": f"Your papers for {label}",
            "count": count,
            "period_label": label,
            "sections": sections,
            "email": email,
            "cadence_label": CADENCE_LABELS[prefs.cadence],
            "base_url": self.base_url,
            "preferences_url": links.preferences,
            "unsubscribe_url": links.unsubscribe,
        }
        headers = {
            "List-Unsubscribe": f"<{links.unsubscribe}>",
            "List-Unsubscribe-Post": "List-Unsubscribe=One-Click",
            "List-Id": f"paperfeed digest <digest.{self._host}>",
            "Message-ID": f"<digest-{digest_id}@{self._host}>",  # one per ledger row: a resend is a duplicate
            "Auto-Submitted": "auto-generated",
            "Precedence": "bulk",
        }
        return OutgoingMail(
            to=email,
            subject=subject,
            text=self._text.get_template("digest.txt").render(context),
            html=self._html.get_template("digest.html").render(context),
            headers=headers,
            images=tuple(images),
        )

    def _rising(self, section: DigestSection, digest_id: int, images: list[InlineImage]) -> _Section:
        """The "Rising this week" section: each topic with its lift in words and its plot as an inline
        PNG (at most ``SHOWN`` topics, each plot at most ``MAX_PNG_BYTES``: the mail stays small)."""
        topics: list[_Topic] = []
        for entry in section.topics[:SHOWN]:
            cid: str | None = None
            if entry.shares:
                data = self._plot(entry.shares)
                if len(data) <= MAX_PNG_BYTES:
                    cid = f"rising-{entry.topic_id}.{digest_id}@{self._host}"
                    images.append(InlineImage(cid, data, "png", f"rising-{entry.topic_id}.png"))
            topics.append(
                _Topic(
                    label=_shorten(_clean(entry.label), 120),
                    url=f"{self.base_url}/topics/{entry.topic_id}",
                    lift=lift_words(entry),
                    alt=shares_alt(entry),
                    cid=cid,
                )
            )
        return _Section(section.heading(), (), tuple(topics))

    def _plot(self, shares: tuple[float, ...]) -> bytes:
        found = self._plots.get(shares)
        if found is None:
            if len(self._plots) >= 256:
                self._plots.clear()
            found = self._plots[shares] = bar_png(shares)
        return found

    def _item(self, paper: Paper, why: str | None) -> _Item:
        line = paper.one_line  # HF's one-line summary, else the abstract's sentence extracted as one
        summary = line.text if line is not None else paper.abstract
        meta = list(paper.categories[:3])
        if paper.upvotes:
            meta.append(f"▲ {paper.upvotes}")
        if paper.published is not None:
            meta.append(f"{paper.published:%Y-%m-%d}")
        return _Item(
            title=_shorten(_clean(paper.title), 300),
            url=self.paper_url(paper.id),
            authors=_clean(_authors(paper.authors)),
            summary=_shorten(_clean(summary), _SUMMARY_CHARS),
            why=_clean(why) if why else None,
            meta=" · ".join(meta),
            summary_label=line.label if line is not None else None,
        )

    # -- subscription mail --------------------------------------------------------------------------

    def confirmation_mail(
        self, email: str, subscription_id: int, nonce: str, prefs: Preferences
    ) -> OutgoingMail:
        links = self.links(subscription_id, nonce)
        context = {
            "subject": "Confirm your paperfeed digest",
            "preheader": "One click to start getting research papers by mail.",
            "email": email,
            "cadence_label": CADENCE_LABELS[prefs.cadence],
            "confirm_url": links.confirm,
            "base_url": self.base_url,
        }
        return self._mail("confirm", email, context)

    def already_subscribed_mail(self, email: str, subscription_id: int) -> OutgoingMail:
        links = self.links(subscription_id)
        context = {
            "subject": "Your paperfeed digest",
            "preheader": "You already get a paperfeed digest.",
            "email": email,
            "preferences_url": links.preferences,
            "unsubscribe_url": links.unsubscribe,
            "base_url": self.base_url,
        }
        headers = {
            "List-Unsubscribe": f"<{links.unsubscribe}>",
            "List-Unsubscribe-Post": "List-Unsubscribe=One-Click",
        }
        return self._mail("already", email, context, headers)

    def _mail(
        self, name: str, email: str, context: Mapping[str, object], headers: dict[str, str] | None = None
    ) -> OutgoingMail:
        return OutgoingMail(
            to=email,
            subject=str(context["subject"]),
            text=self._text.get_template(f"{name}.txt").render(context),
            html=self._html.get_template(f"{name}.html").render(context),
            headers={"Auto-Submitted": "auto-generated", **(headers or {})},
        )


class JinjaDigestRenderers:
    """:class:`~paperfeed.domain.digest_mail.DigestRenderers`: one :class:`JinjaDigestRenderer` per base
    URL, made on first use and kept (its templates are compiled once)."""

    def __init__(self, signer: LinkSigner) -> None:
        self.signer = signer
        self._made: dict[str, JinjaDigestRenderer] = {}
        self._lock = threading.Lock()

    def for_base(self, base_url: str) -> JinjaDigestRenderer:
        with self._lock:
            found = self._made.get(base_url)
            if found is None:
                if len(self._made) >= 16:  # base URLs come from configuration and tests: a handful
                    self._made.clear()
                found = self._made[base_url] = JinjaDigestRenderer(base_url, self.signer)
            return found
