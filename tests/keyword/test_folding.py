"""The two accent-folding rule sets, and why they differ (see paperfeed.adapters.keyword.folding)."""

from __future__ import annotations

from paperfeed.adapters.keyword.folding import fold


def test_both_rules_take_common_accents_and_strokes_off_one_character_for_one() -> None:
    for rules in ("latin", "marks"):
        assert fold("Naïve résumé, Łódź", rules) == "Naive resume, Lodz"
        text = "Ærøskøbing ﬁ ² ſ ạ ά й 한"
        assert len(fold(text, rules)) == len(text)


def test_latin_rules_fold_compatibility_forms_of_the_latin_blocks_only() -> None:
    # tantivy's stored documents were folded this way: "²" and long s fold, letters beyond U+024F do not
    assert fold("x² ſ ạ ά", "latin") == "x2 s ạ ά"


def test_marks_rules_take_combining_marks_off_any_letter_as_postgresql_does() -> None:
    # migration 0009's paperfeed_fold (checked against PostgreSQL in tests/postgres/test_backend.py)
    assert fold("x² ſ ạ ά", "marks") == "x² ſ a α"
