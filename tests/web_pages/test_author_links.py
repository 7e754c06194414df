"""Author links on cards are built by ``quote_plus`` and kept (issue #19: ``urlencode`` per author per
card was a tenth of a day page's CPU); they must be the URLs ``urlencode`` gave."""

from __future__ import annotations

from urllib.parse import urlencode

from hypothesis import given, settings
from hypothesis import strategies as st

from paperfeed.web.views import author_search_url


@settings(max_examples=400, deadline=None)
@given(name=st.text(max_size=40))
def test_author_links_are_what_urlencode_gave(name: str) -> None:
    expected = "/search?" + urlencode({"q": f'author:"{name}"'})
    assert author_search_url(name) == expected
    assert author_search_url(name) == expected  # the kept answer too


def test_hostile_and_unicode_names() -> None:
    for name in ["Yann LeCun", "A&B=C?D#E", "Zoë Ångström", '"quoted"', "a+b / c%20", "李 小龙", ""]:
        assert author_search_url(name) == "/search?" + urlencode({"q": f'author:"{name}"'})
