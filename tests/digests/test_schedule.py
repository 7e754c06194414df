"""The pure digest rules: schedules and periods, preferences, link tokens and how a digest is composed."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from paperfeed.domain.digest import (
    MAX_ITEMS,
    Cadence,
    InvalidPreferences,
    Pick,
    Preferences,
    Section,
    compose,
    latest_slot,
    normalize_email,
    period_of,
    window_days,
)
from paperfeed.domain.digest_links import InvalidToken, LinkSigner
from tests.support.papers import paper


def utc(year: int, month: int, day: int, hour: int = 0, minute: int = 0) -> datetime:
    return datetime(year, month, day, hour, minute, tzinfo=UTC)


def test_daily_slot_is_the_latest_local_send_hour() -> None:
    prefs = Preferences(Cadence.daily, send_hour=7, timezone="Europe/Berlin").checked()
    # 20 March 2025, 05:59 UTC = 06:59 in Berlin: today's 07:00 has not come, so yesterday's
    assert latest_slot(prefs, utc(2025, 3, 20, 5, 59)) == utc(2025, 3, 19, 6, 0)
    assert latest_slot(prefs, utc(2025, 3, 20, 6, 0)) == utc(2025, 3, 20, 6, 0)
    assert period_of(prefs, utc(2025, 3, 20, 6, 0)) == "2025-03-20"


def test_local_day_decides_the_period_across_midnight_utc() -> None:
    prefs = Preferences(Cadence.daily, send_hour=8, timezone="Asia/Tokyo").checked()
    slot = latest_slot(prefs, utc(2025, 3, 19, 23, 30))  # 08:30 on the 20th in Tokyo
    assert slot == utc(2025, 3, 19, 23, 0)
    assert period_of(prefs, slot) == "2025-03-20"


def test_weekdays_skip_the_weekend_and_monday_covers_it() -> None:
    prefs = Preferences(Cadence.weekdays, send_hour=7, timezone="UTC").checked()
    sunday = utc(2025, 3, 23, 12, 0)
    assert latest_slot(prefs, sunday) == utc(2025, 3, 21, 7, 0)  # Friday's
    monday = latest_slot(prefs, utc(2025, 3, 24, 7, 0))
    assert monday == utc(2025, 3, 24, 7, 0)
    assert window_days(prefs, monday) == 3
    assert window_days(prefs, utc(2025, 3, 25, 7, 0)) == 1


def test_weekly_on_the_chosen_day_keyed_by_iso_week() -> None:
    prefs = Preferences(Cadence.weekly, send_hour=9, timezone="America/New_York", weekday=4).checked()
    slot = latest_slot(prefs, utc(2025, 3, 26, 12, 0))  # a Wednesday: last Friday's
    assert slot == utc(2025, 3, 21, 13, 0)  # 09:00 EDT
    assert period_of(prefs, slot) == "2025-W12"
    assert window_days(prefs, slot) == 7


def test_a_send_hour_skipped_by_daylight_saving_still_has_a_slot() -> None:
    prefs = Preferences(Cadence.daily, send_hour=2, timezone="Europe/Berlin").checked()
    slot = latest_slot(prefs, utc(2025, 3, 30, 12, 0))  # 02:00 does not exist that night in Berlin
    assert period_of(prefs, slot) == "2025-03-30"
    assert utc(2025, 3, 30, 0, 0) <= slot <= utc(2025, 3, 30, 2, 0)


@pytest.mark.parametrize(
    ("prefs", "field"),
    [
        (Preferences(send_hour=24), "send_hour"),
        (Preferences(timezone="Mars/Olympus"), "timezone"),
        (Preferences(sections=()), "sections"),
        (Preferences(sections=("gossip",)), "sections"),  # type: ignore[arg-type]
        (Preferences(sections=(Section.categories,)), "categories"),
        (Preferences(categories=("cs.CL; DROP",)), "categories"),
        (Preferences(max_items=MAX_ITEMS + 1), "max_items"),
        (Preferences(cadence="hourly"), "cadence"),  # type: ignore[arg-type]
    ],
)
def test_bad_preferences_name_their_field(prefs: Preferences, field: str) -> None:
    with pytest.raises(InvalidPreferences) as caught:
        prefs.checked()
    assert caught.value.field == field


def test_email_addresses_are_normalised_or_refused() -> None:
    assert normalize_email("  Ada@Example.ORG ") == "ada@example.org"
    for bad in (
        "",
        "ada",
        "ada@",
        "@example.org",
        "a b@example.org",
        "ada@example",
        "x@y.org\r\nBcc: z@w.org",
    ):
        with pytest.raises(InvalidPreferences):
            normalize_email(bad)


def test_compose_dedupes_skips_sent_and_caps() -> None:
    trending = [Pick(paper(p)) for p in ("a", "b", "c", "d")]
    mine = [Pick(paper(p), f"why {p}") for p in ("c", "e", "f", "g")]
    digest = compose(
        [(Section.for_you, "", mine), (Section.trending, "", trending)],
        already_sent={"e"},
        cap=5,
        per_section=3,
        hidden={"a"},
    )
    assert [s.section for s in digest.sections] == [Section.for_you, Section.trending]
    assert [(e.paper_id, e.why) for e in digest.sections[0].entries] == [
        ("c", "why c"),
        ("f", "why f"),
        ("g", "why g"),
    ]
    assert [e.paper_id for e in digest.sections[1].entries] == ["b", "d"]  # c shown above, a hidden, cap 5
    again = type(digest).from_json(digest.to_json())
    assert again == digest


def test_compose_of_nothing_new_is_empty() -> None:
    digest = compose([(Section.trending, "", [Pick(paper("a"))])], already_sent={"a"}, cap=10, per_section=10)
    assert digest.empty
    assert digest.sections == ()


def test_link_tokens_are_single_purpose_and_tamper_proof() -> None:
    signer = LinkSigner(b"k" * 32)
    token = signer.sign("unsubscribe", 42)
    assert signer.verify("unsubscribe", token) == (42, "")
    with pytest.raises(InvalidToken):
        signer.verify("preferences", token)  # the same subscription, another purpose
    with pytest.raises(InvalidToken):
        LinkSigner(b"x" * 32).verify("unsubscribe", token)  # another instance's secret
    forged = LinkSigner(b"k" * 32).sign("unsubscribe", 43).split(".")[0] + "." + token.split(".")[1]
    with pytest.raises(InvalidToken):
        signer.verify("unsubscribe", forged)
    confirm = signer.sign("confirm", 7, "nonce123")
    assert signer.verify("confirm", confirm) == (7, "nonce123")
    for garbage in ("", "abc", "a.b.c", "%%%.***", confirm[:-3]):
        with pytest.raises(InvalidToken):
            signer.verify("confirm", garbage)
