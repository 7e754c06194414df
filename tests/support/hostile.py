"""A corpus of hostile strings for every text a user or a source can hand paperfeed.

Each entry is ``(name, value)``; ``STRINGS`` are ``str`` (what survives a form or a JSON body), ``BYTES``
are raw request bodies or file contents that are not valid text. Used by the property tests of the
parsers and importers and by the web sweep (every route, every parameter, every field).
"""

from __future__ import annotations

__all__ = ["BYTES", "STRINGS", "hostile_strings"]

_NESTED = "[" * 10_000 + "]" * 10_000

STRINGS: list[tuple[str, str]] = [
    ("empty", ""),
    ("space", "   "),
    ("huge", "a" * 1_000_000),
    ("huge-words", "transformer " * 50_000),
    ("nul", "graph\x00neural"),
    ("control", "\x01\x02\x1b[31mred\x1b[0m\x7f"),
    ("lone-high-surrogate", "abc\ud800def"),
    ("lone-low-surrogate", "\udfffx"),
    ("rtl-override", "\u202eevil\u202c txt.exe"),
    ("bidi-isolates", "\u2066\u2067\u2068abc\u2069"),
    ("zero-width", "g\u200br\u200ca\u200dph\ufeff"),
    ("combining", "e" + "\u0301" * 500),
    ("emoji", "🧬🔬 LLMs 👩🏽‍🔬🏳️‍🌈"),
    ("cjk", "大規模言語モデル 그래프 신경망"),
    ("sql-quote", "' OR '1'='1"),
    ("sql-drop", "1; DROP TABLE papers; --"),
    ("sql-union", "x' UNION SELECT password_hash FROM users --"),
    ("like-wildcards", "%_%\\"),
    ("fts5-syntax", 'NEAR(a b) AND "x" OR title:* ^z'),
    ("tsquery-syntax", "a & !b | (c <-> d):*"),
    ("tantivy-syntax", "title:(a OR b)~2 +c -d [a TO z]"),
    ("html", "<b>bold</b><img src=x onerror=alert(1)>"),
    ("script", "<script>alert(document.cookie)</script>"),
    ("attr-break", '"><svg onload=alert(1)>'),
    ("js-url", "javascript:alert(1)"),
    ("data-url", "data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg=="),
    ("template", "{{ 7*7 }}{% raw %}${7*7}"),
    ("markdown-link", "[click](javascript:alert(1)) ![x](http://evil.example/x.png)"),
    ("path-traversal", "../../../../etc/passwd"),
    ("path-encoded", "..%2f..%2f..%2fetc%2fpasswd"),
    ("windows-path", "..\\..\\windows\\win.ini"),
    ("url-like", "http://127.0.0.1:22/"),
    ("crlf-header", "a\r\nSet-Cookie: pwned=1"),
    ("nested-brackets", _NESTED),
    ("nested-quotes", '"' * 5000),
    ("dashes", "-" * 5000),
    ("number-huge", "9" * 400),
    ("number-negative", "-1"),
    ("float-nan", "NaN"),
    ("int64-overflow", str(2**63)),
    ("arxiv-like", "2401.00001v999999999999"),
    ("json", '{"__proto__": {"admin": true}}'),
    ("format-string", "%s%s%s%n{0}{1}"),
    ("unicode-max", "\U0010ffff"),
    ("nbsp-only", "\u00a0\u2003\u3000"),
    ("email-ish", "a@b@c@@.example"),
]

BYTES: list[tuple[str, bytes]] = [
    ("invalid-utf8", b"\xff\xfe\xfd graph"),
    ("overlong-utf8", b"\xc0\xaf\xe0\x80\xaf"),
    ("truncated-utf8", "caf\u00e9".encode()[:-1]),
    ("utf16-bom", "\ufeffhello".encode("utf-16")),
    ("nul-bytes", b"\x00" * 64),
    ("binary", bytes(range(256))),
    ("gzip-magic", b"\x1f\x8b\x08\x00garbage"),
    ("xml-bomb", b'<?xml version="1.0"?><!DOCTYPE l [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;'
     b'&a;&a;&a;&a;&a;"><!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">]><l>&c;&c;&c;</l>'),
    ("xxe", b'<?xml version="1.0"?><!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]><x>&e;</x>'),
]  # fmt: skip


def hostile_strings(*, max_length: int | None = None) -> list[tuple[str, str]]:
    """The string corpus, optionally without entries longer than ``max_length`` characters."""
    if max_length is None:
        return list(STRINGS)
    return [(name, value) for name, value in STRINGS if len(value) <= max_length]
