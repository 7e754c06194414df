"""The citation-velocity formula of ``sort=cited`` (domain/citation_trend.py)."""

from __future__ import annotations

from datetime import date

import pytest

from paperfeed.domain.citation_trend import CitedParams, citation_velocity, months_between

AS_OF = date(2026, 11, 20)
P = CitedParams()


def test_old_papers_divide_by_the_twelve_months() -> None:
    assert citation_velocity(24, date(2015, 6, 1), AS_OF, P) == pytest.approx(2.0)
    assert citation_velocity(24, None, AS_OF, P) == pytest.approx(2.0)  # undated counts as old


def test_young_papers_divide_by_their_age_but_at_least_three_months() -> None:
    six_months = date(2026, 5, 21)
    assert months_between(six_months, AS_OF) == pytest.approx(183 / (365.25 / 12))
    assert citation_velocity(12, six_months, AS_OF, P) == pytest.approx(12 / (183 / (365.25 / 12)))
    week_old = date(2026, 11, 13)
    assert citation_velocity(3, week_old, AS_OF, P) == pytest.approx(1.0)  # 3 / 3, not 3 / 0.23
    assert citation_velocity(3, date(2027, 1, 1), AS_OF, P) == pytest.approx(1.0)  # future date: age 0


def test_formula_text_names_its_parameter() -> None:
    assert P.formula().endswith("m = 3")
    assert "citations_last_12_months" in P.formula()
