"""Counts in words (issue #40 item 12, issue #39's status grammar): one helper, used by every message.

The helper's rules, then a scan of the message catalogue -- every f-string, %-format and template of the
package -- for a number pasted before a plural noun (``f"{n} papers"``), which says "1 papers" when ``n``
is one: a new one fails here, with where it is and what to write instead.
"""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

import pytest

from paperfeed.domain.wording import agree, count, every, plural

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "paperfeed"


def test_a_count_says_its_noun_in_the_right_number() -> None:
    assert count(1, "paper") == "1 paper"
    assert count(0, "paper") == "0 papers"
    assert count(2, "paper") == "2 papers"
    assert count(12_345, "paper") == "12,345 papers"
    assert count(1, "query") == "1 query"
    assert count(3, "query") == "3 queries"
    assert count(2, "entry") == "2 entries"
    assert count(2, "day") == "2 days"  # a vowel before the y
    assert count(4, "search") == "4 searches"
    assert count(2, "crash") == "2 crashes"
    assert count(2, "one-line summary") == "2 one-line summaries"
    assert count(2, "coarse topic") == "2 coarse topics"
    assert count(2, "new one") == "2 new ones"
    assert count(1.0, "second") == "1 second"  # a whole float is said as an integer
    assert count(1.5, "hour") == "1.5 hours"
    assert count(2, "person", "people") == "2 people"


def test_the_verb_and_the_subject_agree_with_the_count() -> None:
    assert agree(1, "has", "have") == "has"
    assert agree(0, "has", "have") == "have"
    assert agree(7, "has", "have") == "have"
    assert every(0, "paper") == "no papers"
    assert every(1, "paper") == "the one paper"
    assert every(12, "paper") == "all 12 papers"
    assert plural("analysis") == "analyses"


def test_the_messages_of_the_cases_the_issues_name() -> None:
    """ "1 have no vector", "embedded 1 papers", "sentences: 1 papers", "all 0 papers are embedded"."""
    from paperfeed.domain.coverage import SearchCoverage
    from paperfeed.services.indexing import IndexPlan
    from paperfeed.services.sentences import SentencePlan

    said = SearchCoverage(1, 2).note(None)
    assert said is not None
    assert "1 has no vector" in said
    assert "2 papers" in said
    assert IndexPlan("m", 0, 0, {}, False).message() == "no papers yet: nothing to embed with m"
    assert IndexPlan("m", 1, 0, {}, False).message() == "the one paper is embedded with m"
    assert IndexPlan("m", 3, 0, {}, False).message() == "all 3 papers are embedded with m"
    assert IndexPlan("m", 3, 1, {}, False).message() == "embedding 1 paper with m (2 already up to date)"
    assert SentencePlan("m", 1, 0).message() == "sentences: the one paper is split and embedded with m"
    assert SentencePlan("m", 0, 0).message() == "sentences: no papers yet: nothing to split with m"
    splitting = SentencePlan("m", 2, 1).message()
    assert splitting.startswith("sentences: splitting and embedding the abstracts of 1 paper")


# -- the scan ---------------------------------------------------------------------------------------------

# Nouns messages count. A number pasted before one of their plurals is "1 papers" waiting to happen.
NOUNS = (  # noqa: SIM905 - a paragraph of words reads better than a column of them
    "abstract assignment attempt batch byte category character citation comment crash day digest dimension "
    "distractor document edge entry error file group hour id invite invitation item job key level listing "
    "member minute model node note pair page paper query reader record reference result row run search "
    "second sentence session source step subscriber summary tag text thread time token topic upvote user "
    "vector vote week word worker"
).split()
PLURALS = {plural(noun): noun for noun in NOUNS}
_WORDS = "|".join(sorted(PLURALS, key=len, reverse=True))
# a placeholder (f-string), a %-format or a template expression, then one space and a counted noun's
# plural; a float's format (.1f, g, %) is a measure ("2.5 papers/s"), not a count
_FSTRING = re.compile(r"\{([^{}]*?)(![rsa])?(:[^{}]*)?\} (" + _WORDS + r")\b")
_PERCENT = re.compile(r"%[-,0-9]*[dis] (" + _WORDS + r")\b")
_TEMPLATE = re.compile(r"\{\{((?:[^{}]|\{:,\})*?)\}\} (" + _WORDS + r")\b")  # "{:,}".format(n) too
# a hedge: "{n} paper(s)", "%d record(s)", "{{ n }} saved paper(s)" -- whatever the noun, count() says it
_HEDGE = re.compile(r"(\{[^{}]*\}|%[-,0-9]*[dis]|\}\}) ([\w-]+ )*[\w-]+\((s|es)\)")
_MEASURE = re.compile(r"\.\d*[efg%]|[efg%]$")  # an f-string's format spec of a float
_TEMPLATE_MEASURE = re.compile(r"%[-0-9]*\.?\d*[efg]|\{:[^}]*[efg%]\}")  # "%.1f"|format(x), "{:.2f}".format

# The few that are no count, each with its reason (file, the placeholder's expression).
ALLOWED = {
    ("services/indexing.py", "result.model_id"),  # "made <model> vectors": a model's name, not a number
    ("web/pages_feed.py", "t.velocity"),  # "2.3 citations/month": a rate
    ("services/groups.py", "inviter"),  # "Ada invites you": a verb
}


def _string_tokens(path: Path) -> list[tuple[int, str]]:
    tokens = tokenize.generate_tokens(io.StringIO(path.read_text()).readline)
    return [(t.start[0], t.string) for t in tokens if t.type == tokenize.STRING]


def _pasted_counts() -> list[str]:
    found: list[str] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        where = path.relative_to(PACKAGE).as_posix()
        for line, text in _string_tokens(path):
            prefix = re.match(r"[rRbBuUfF]*", text).group(0).lower()  # type: ignore[union-attr]
            if "f" in prefix:
                for m in _FSTRING.finditer(text):
                    expr, spec = m.group(1).strip(), (m.group(3) or "")[1:]
                    if _MEASURE.search(spec) or (where, expr) in ALLOWED:
                        continue
                    noun = PLURALS[m.group(4)]
                    found.append(f"{where}:{line}: {m.group(0)!r} -> {{count({expr}, {noun!r})}}")
            for m in _PERCENT.finditer(text):
                found.append(f"{where}:{line}: {m.group(0)!r} -> a %s of count(n, {PLURALS[m.group(1)]!r})")
            if "f" in prefix or "%" in text:
                for m in _HEDGE.finditer(text):
                    found.append(f"{where}:{line}: {m.group(0)!r} -> count(n, noun): the noun in its number")
    for path in sorted(PACKAGE.rglob("templates/**/*")):
        if not path.is_file() or path.suffix not in (".html", ".txt", ".xml", ".md"):
            continue
        where = path.relative_to(PACKAGE).as_posix()
        for number, text in enumerate(path.read_text().splitlines(), 1):
            for m in _HEDGE.finditer(text):
                if m.group(1) == "}}":
                    found.append(f"{where}:{number}: {m.group(0)!r} -> {{{{ n|count(noun) }}}}")
            for m in _TEMPLATE.finditer(text):
                if "|count(" in m.group(1) or _TEMPLATE_MEASURE.search(m.group(1)):
                    continue
                noun = PLURALS[m.group(2)]
                found.append(f"{where}:{number}: {m.group(0)!r} -> {{{{ n|count({noun!r}) }}}}")
    return found


def test_no_message_pastes_a_number_before_a_plural() -> None:
    """Every count in a message goes through ``domain/wording.py``: ``count(n, "paper")``."""
    found = _pasted_counts()
    assert not found, "a number pasted before a plural says '1 papers':\n" + "\n".join(found)


@pytest.mark.parametrize(
    "source",
    [
        'f"embedded {n:,} papers"',
        'f"sentences: {summary.papers} papers"',
        '"%d papers in %.1f s"',
        'f"{report.problems} problem(s) found"',
        '"%d changed paper(s) left"',
        'f"+{n:,} citation link(s)"',
    ],
)
def test_the_scan_finds_a_pasted_count(source: str, tmp_path: Path) -> None:
    """The scan itself can fail: the shapes the issues found are caught."""
    module = tmp_path / "bad.py"
    module.write_text(f"MESSAGE = {source}\n")
    [(_, text)] = _string_tokens(module)
    hits = list(_FSTRING.finditer(text)) + list(_PERCENT.finditer(text)) + list(_HEDGE.finditer(text))
    assert hits, source
