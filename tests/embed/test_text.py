from __future__ import annotations

from paperfeed.domain.embedding import PendingPaper, embedding_text


def test_title_and_abstract_joined_by_a_full_stop() -> None:
    assert embedding_text("Deep nets", "We study them.") == "Deep nets. We study them."
    assert embedding_text("Is attention all you need?", "Maybe.") == "Is attention all you need?. Maybe."


def test_missing_abstract_embeds_the_title_alone() -> None:
    assert embedding_text("Only a title", "") == "Only a title"


def test_pending_paper_uses_the_same_recipe() -> None:
    paper = PendingPaper("x", "T", "A", "h", has_vector=False)
    assert paper.text == embedding_text("T", "A") == "T. A"
