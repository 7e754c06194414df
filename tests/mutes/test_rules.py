"""The rules themselves: what each kind matches, and what is refused."""

from __future__ import annotations

import pytest

from paperfeed.domain.models import Paper
from paperfeed.domain.mutes import NO_MUTES, InvalidMuteRule, check_rule, compile_rules


def _paper(
    title: str, abstract: str = "", authors: tuple[str, ...] = ("A",), cats: tuple[str, ...] = ("cs.LG",)
) -> Paper:
    return Paper(
        id="2501.00001", title=title, abstract=abstract, authors=authors, categories=cats, sources={}
    )


def test_each_kind_matches_what_a_reader_means() -> None:
    rules = compile_rules(
        [
            check_rule("author", "José  García"),
            check_rule("category", "hep-th"),
            check_rule("category", "cs.CV"),
            check_rule("word", "Diffusion"),
            check_rule("word", "large language model"),
        ]
    )
    assert rules.muted(_paper("x", authors=("Jose Garcia",)))  # accents and case
    assert not rules.muted(_paper("x", authors=("José Garcíaz",)))
    assert rules.muted(_paper("x", cats=("hep-th",)))
    assert rules.muted(_paper("x", cats=("cs.LG", "cs.CV")))
    assert not rules.muted(_paper("x", cats=("cs.CL",)))
    assert rules.muted(_paper("Latent DIFFUSION models"))
    assert rules.muted(_paper("x", "We train a large  language model.".replace("  ", " ")))
    assert not rules.muted(_paper("Diffusionless transformers"))  # whole words only
    assert not rules.muted(_paper("x", "a large language modeling study"))
    assert not NO_MUTES
    assert NO_MUTES.papers([_paper("x")]) == ([_paper("x")], 0)


def test_a_whole_archive_mutes_its_categories() -> None:
    rules = compile_rules([check_rule("category", "cs")])
    assert rules.muted(_paper("x", cats=("cs.AI",)))
    assert not rules.muted(_paper("x", cats=("math.ST",)))


@pytest.mark.parametrize(
    ("kind", "value", "field"),
    [("topic", "x", "kind"), ("word", "   ", "value"), ("word", "x" * 101, "value"), ("word", "?!", "value"),
     ("category", "cs CV; drop", "value")],
)  # fmt: skip
def test_bad_rules_are_refused_saying_why(kind: str, value: str, field: str) -> None:
    with pytest.raises(InvalidMuteRule) as caught:
        check_rule(kind, value)
    assert caught.value.field == field


@pytest.mark.parametrize(
    "name", ["Ada Lovelace", "  ada   LOVELACE ", "José García", "O'Brien-Smith, Jr.", "Zoë\tK", "a\x00b"]
)
def test_the_fast_author_key_agrees_with_the_librarys(name: str) -> None:
    from paperfeed.domain.library import author_key
    from paperfeed.domain.mutes import _author_key

    assert _author_key(name) == author_key(name)
