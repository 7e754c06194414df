"""Untrusted text → safe HTML: escaping, highlight marks, TeX math, snippets, BibTeX and URLs."""

from __future__ import annotations

from datetime import UTC, datetime
from html.parser import HTMLParser
from typing import Any

import lxml.html
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from paperfeed.domain.citation import bibtex, bibtex_key
from paperfeed.domain.models import Paper
from paperfeed.domain.search import Span
from paperfeed.web.markup import plain_text, render_text, segments, snippet
from paperfeed.web.views import count_label, page_links, paper_url, safe_url
from tests.support.papers import paper as make_paper

MATHML = {
    "math", "mrow", "mi", "mn", "mo", "ms", "mtext", "mspace", "msup", "msub", "msubsup", "mfrac", "msqrt",
    "mroot", "mover", "munder", "munderover", "mtable", "mtr", "mtd", "mstyle", "mpadded", "mphantom",
    "menclose", "semantics", "annotation", "merror",
}  # fmt: skip


def _fragment(html: str) -> lxml.html.HtmlElement:
    return lxml.html.fragment_fromstring(html, create_parent="div")


class _Parsed(HTMLParser):
    """Text and tags of an HTML fragment, as a browser's tokenizer sees them (whitespace kept)."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []
        self.feed(html)
        self.close()
        self.text = "".join(self.parts)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, attrs))

    def handle_data(self, data: str) -> None:
        self.parts.append(data)


def test_everything_is_escaped() -> None:
    html = render_text('<script>alert("x")</script> & &amp; <b onclick="y">', math=False)
    assert html == (
        "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt; &amp; &amp;amp; &lt;b onclick=&#34;y&#34;&gt;"
    )


def test_spans_become_marks_merged_and_clipped() -> None:
    text = "graph neural networks for graphs"
    spans = [Span(0, 5), Span(3, 12), Span(26, 99), Span(-4, 0), Span(7, 7)]
    html = str(render_text(text, spans))
    assert html == "<mark>graph neural</mark> networks for <mark>graphs</mark>"


def test_marks_never_break_escaping() -> None:
    text = "a <b>&</b> c"
    html = str(render_text(text, [Span(2, 6), Span(6, 8)]))
    assert html == "a <mark>&lt;b&gt;&amp;&lt;/</mark>b&gt; c"
    assert _Parsed(html).text == text


def test_dollar_rules() -> None:
    kinds = [(s.text, s.tex) for s in segments("costs $5 and $10, a $ sign, \\$x$ and $x^2$ here")]
    assert kinds == [("costs $5 and $10, a $ sign, \\$x$ and ", None), ("$x^2$", "x^2"), (" here", None)]
    assert [s.tex for s in segments("$$E = mc^2$$ and $ x$ and $x $")] == ["E = mc^2", None]
    assert segments("$<b>bold</b>$")[0].tex is None  # pasted markup is not TeX
    assert segments("$$") == [segments("$$")[0]]
    assert segments("$$")[0].tex is None


def test_math_becomes_sanitised_mathml() -> None:
    html = str(render_text(r"Sub-$\mathcal{O}(n^2)$ with $\frac{1}{8}$"))
    root = _fragment(html)
    maths = root.cssselect("math")
    assert [m.get("alttext") for m in maths] == [r"\mathcal{O}(n^2)", r"\frac{1}{8}"]
    assert root.cssselect("msup")
    assert root.cssselect("mfrac")
    for element in root.iter():
        if element.tag not in ("div", "span"):
            assert element.tag in MATHML, element.tag
        assert set(element.attrib) <= {"class", "display", "alttext", "stretchy", "mathvariant"}


@pytest.mark.parametrize(
    "tex",
    [r"$\href{javascript:alert(1)}{x}$", r"$\color{red}{x}$", r"$\style{color:red}{x}$"],
)
def test_links_colours_and_styles_are_dropped_from_math(tex: str) -> None:
    html = str(render_text(tex))
    root = _fragment(html)
    for element in root.iter():
        for name, value in element.attrib.items():
            if name != "alttext":
                assert "javascript" not in value, html
                assert name not in ("href", "style", "mathcolor"), html


@pytest.mark.parametrize("tex", [r"$x^$", r"$\frac{1}{$", r"$\unknowncmd{x}$", "$}{$"])
def test_tex_that_cannot_be_converted_is_shown_as_source(tex: str) -> None:
    html = str(render_text(tex))
    assert html == f'<span class="tex">{tex}</span>'


def test_highlight_over_math_marks_the_whole_formula() -> None:
    html = str(render_text("speed $2\\times$ up", [Span(7, 9)]))
    assert html.startswith('speed <mark><span class="math"><math')
    assert html.endswith("</math></span></mark> up")


def test_plain_text_reads_math_out() -> None:
    assert plain_text(r"An $\mathcal{O}(n^2)$ bound, $\frac{1}{8}$ and $x_i$ at $2.35\times$") == (
        "An 𝒪(n^2) bound, 1/8 and x_i at 2.35×"
    )
    assert plain_text("$\\unknowncmd{x}$ and $5") == "$\\unknowncmd{x}$ and $5"


def test_snippet_centres_on_the_first_match_and_keeps_math_whole() -> None:
    text = "lead " * 80 + "the target word $x_1 + y$ follows " + "tail " * 80
    start = text.index("target")
    window, spans = snippet(text, [Span(start, start + 6)], width=60)
    assert window.startswith("… ")
    assert window.endswith(" …")
    assert [window[s.start : s.end] for s in spans] == ["target"]
    assert "$x_1 + y$" in window
    math_at = text.index("$x_1")
    window, _ = snippet(text, [Span(math_at + 2, math_at + 3)], width=20)
    assert "$x_1 + y$" in window  # the window grew rather than cut the formula
    short, same = snippet("short text", [Span(0, 5)])
    assert (short, same) == ("short text", (Span(0, 5),))


_TEXT = st.text(
    alphabet=st.sampled_from([*list("ab $\\{}^_<>&\"'/;=xyz10"), "ש", "ع", "é", "\u202e", "\n"]),
    max_size=80,
)


@settings(max_examples=300, deadline=None)
@given(text=_TEXT, raw=st.lists(st.tuples(st.integers(-5, 90), st.integers(-5, 90)), max_size=5))
def test_without_math_the_text_always_survives_exactly(text: str, raw: list[tuple[int, int]]) -> None:
    parsed = _Parsed(str(render_text(text, [Span(a, b) for a, b in raw], math=False)))
    assert parsed.text == text
    assert {(tag, tuple(attrs)) for tag, attrs in parsed.tags} <= {("mark", ())}


@settings(max_examples=300, deadline=None)
@given(text=_TEXT)
def test_with_math_only_our_markup_appears(text: str) -> None:
    parsed = _Parsed(str(render_text(text)))
    for tag, attrs in parsed.tags:
        assert tag in {"span", "mark"} | MATHML
        assert not [a for a, _ in attrs if a.startswith("on") or a in ("href", "src", "style")]


def _paper(**kw: Any) -> Paper:
    kw.setdefault("authors", ("Ashish Vaswani", "Noam Shazeer"))
    kw.setdefault("categories", ("cs.CL", "cs.LG"))
    kw.setdefault("day", kw.pop("published", datetime(2017, 6, 12, tzinfo=UTC)))
    return make_paper(kw.pop("id", "1706.03762"), kw.pop("title", "Attention Is All You Need"), **kw)


def test_bibtex_entry() -> None:
    entry = bibtex(_paper(doi="10.5555/x_y"))
    assert entry.splitlines() == [
        "@misc{vaswani2017attention,",
        "  title         = {{Attention Is All You Need}},",
        "  author        = {Ashish Vaswani and Noam Shazeer},",
        "  year          = {2017},",
        "  eprint        = {1706.03762},",
        "  archivePrefix = {arXiv},",
        "  primaryClass  = {cs.CL},",
        "  url           = {https://arxiv.org/abs/1706.03762},",
        "  doi           = {10.5555/x\\_y}",
        "}",
    ]


def test_bibtex_survives_hostile_metadata() -> None:
    entry = bibtex(_paper(id="scifact:12", title="100% of {unbalanced & $a_b$ #1_x", authors=("Ünal Çelik",)))
    assert "title         = {{100\\% of unbalanced \\& $a_b$ \\#1\\_x}}" in entry
    assert "eprint" not in entry
    assert "arxiv.org" not in entry
    assert bibtex_key(_paper(authors=("Ünal Çelik",), title="The $x$ of it")) == "celik2017it"
    assert bibtex_key(_paper(title="Sub-$\\mathcal{O}(n^2)$ attention")) == "vaswani2017sub"
    assert bibtex_key(_paper(authors=(), published=None, title="!!!")) == "170603762"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("https://github.com/a/b", "https://github.com/a/b"),
        ("  http://example.org/x ", "http://example.org/x"),
        ("javascript:alert(1)", None),
        ("JaVaScRiPt:alert(1)", None),
        ("data:text/html,<script>", None),
        ("//evil.example/x", None),
        ("https://exa mple.org", None),
        ("https://", None),
        ("", None),
        (None, None),
    ],
)
def test_safe_url(value: str | None, expected: str | None) -> None:
    assert safe_url(value) == expected


def test_labels_and_links() -> None:
    assert [count_label(n) for n in (None, 0, 999, 1000, 1234, 9999, 12_345, 2_500_000)] == [
        "–", "0", "999", "1k", "1.2k", "10k", "12k", "2.5M",
    ]  # fmt: skip
    assert paper_url("hep-th/9901001") == "/papers/hep-th/9901001"
    assert paper_url("scifact:12") == "/papers/scifact:12"
    links = page_links(6, 12, lambda n: f"?page={n}")
    assert [link.number for link in links] == [1, 0, 4, 5, 6, 7, 8, 0, 12]
    assert [link.url for link in links if link.number in (0, 4)] == [None, "?page=4", None]
