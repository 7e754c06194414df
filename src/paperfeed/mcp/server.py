"""paperfeed as an MCP server: tools and ``paper://`` resources for assistants (docs/mcp.md).

One :class:`~mcp.server.mcpserver.MCPServer` definition, two transports:

* **stdio** (``paperfeed mcp``, a desktop assistant starts it): :func:`stdio_server` gets the CLI's
  :class:`~paperfeed.bootstrap.App` and the reader's token (``--token`` / ``PAPERFEED_MCP_TOKEN``), fixed for
  the process;
* **streamable HTTP** at ``/mcp`` of the web app (remote agents): :class:`HttpEndpoint` is the ASGI route
  ``create_app`` mounts; each request brings its own token (``Authorization: Bearer …``) and finds the App
  in the web app's lifespan state, as ``web/deps.py`` does. Stateless and JSON-answering, so it
  works under several uvicorn workers without session affinity.

Tools about a reader (``for_you``, ``library_*``, ``subscribe_alert``) need a personal API token; the
read-only ones need none, except over HTTP when ``PAPERFEED_MCP_REQUIRE_TOKEN`` is set. Every error a
model can cause (unknown id, bad date, bad limit, no token) comes back as a tool error (``isError``)
whose text says what to do; nothing else of ours is imported here but services, through the App.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import date, datetime
from typing import Annotated, Any, Literal, Protocol, TypeVar

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, Field
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from paperfeed import __version__
from paperfeed.bootstrap import App
from paperfeed.domain.accounts import User
from paperfeed.domain.errors import StoreValueError
from paperfeed.domain.evidence import EVIDENCE_NOTICE
from paperfeed.domain.feed import FeedItem, InvalidPeriod, Period, parse_day, parse_month, parse_week
from paperfeed.domain.groups import GroupForbidden, GroupNotFound, InvalidGroupInput
from paperfeed.domain.ids import MAX_ROW_ID, InvalidPaperId, normalize_paper_id
from paperfeed.domain.library import DEFAULT_TAG, MAX_QUERY_CHARS, InvalidLibraryInput
from paperfeed.domain.models import Paper
from paperfeed.domain.search import SearchFilters, reasons_text
from paperfeed.domain.sentences import Facet
from paperfeed.domain.wording import agree, count
from paperfeed.services.library import LibraryNotFound, PaperState
from paperfeed.services.library_search import LibrarySearchLimited
from paperfeed.services.recommend import UnknownTag

from .paper_markdown import paper_markdown

__all__ = ["HttpEndpoint", "build_server", "stdio_server"]


class Refusal(Protocol):
    """An error reply for a request (status, message, extra headers), as the web answers its errors."""

    def __call__(
        self, request: Request, status: int, message: str, headers: Mapping[str, str] | None = None
    ) -> Response: ...


INSTRUCTIONS = (
    "paperfeed: research papers (mostly arXiv) with daily feeds, hybrid keyword+semantic search, similar "
    "papers and trending. Paper ids are arXiv ids such as 2503.10613 (a version suffix or an arXiv URL is "
    'accepted). search_papers understands author:Name, cat:cs.CL, year:2024, after:/before:, "phrases" and '
    "-exclusions. search_evidence answers a question or claim with the papers' own sentences (quoted, "
    "not generated, no verdict). get_paper (or the paper://{id} resource) gives one paper as Markdown. "
    "Tools about the "
    "reader (for_you, library_*, group_*, subscribe_alert) need a personal API token."
)
MAX_AUTHORS_SHOWN = 3
READER = ToolAnnotations(read_only_hint=True, open_world_hint=False)
CHANGES = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)

# -- who is asking, per transport ------------------------------------------------------------------------


class Surface(Protocol):
    """How one transport finds the App, the token presented and the site's public URL."""

    @property
    def token_hint(self) -> str:
        """How a token reaches this transport, for error messages."""
        ...

    def require_token(self, app: App) -> bool:
        """Whether the read-only tools need a token too."""
        ...

    def app(self, ctx: Context) -> App: ...

    def token(self, ctx: Context) -> str | None: ...

    def site(self, ctx: Context, app: App) -> str: ...

    def anonymous_client(self, ctx: Context) -> str | None:
        """The address of a client without a token, whose searches are rate-limited (None: not limited)."""
        ...


@dataclass(frozen=True)
class _Stdio:
    """``paperfeed mcp``: one App and one reader (or none) for the life of the process."""

    the_app: App
    the_token: str | None
    token_hint: str = "start the server with `paperfeed mcp --token TOKEN` (or set PAPERFEED_MCP_TOKEN)"

    def require_token(self, app: App) -> bool:
        return False  # whoever runs the process can read the data folder anyway

    def app(self, ctx: Context) -> App:
        return self.the_app

    def token(self, ctx: Context) -> str | None:
        return self.the_token

    def site(self, ctx: Context, app: App) -> str:
        return app.core.public_url.rstrip("/")

    def anonymous_client(self, ctx: Context) -> str | None:
        return None  # the person who started the process


def _request(ctx: Context) -> Request:
    request = ctx.request_context.request
    if not isinstance(request, Request):  # pragma: no cover - the HTTP transport always attaches it
        raise ToolError("this request carries no HTTP request")
    return request


class _Http:
    """``/mcp`` of the web app: the App from lifespan state, the token from each request's header."""

    token_hint = "send it as the header `Authorization: Bearer TOKEN`"

    def require_token(self, app: App) -> bool:
        return app.settings.mcp_require_token

    def app(self, ctx: Context) -> App:
        found: App = _request(ctx).state.app
        return found

    def token(self, ctx: Context) -> str | None:
        scheme, _, value = _request(ctx).headers.get("authorization", "").partition(" ")
        return value.strip() if scheme.lower() == "bearer" else None

    def site(self, ctx: Context, app: App) -> str:
        configured = app.settings.base_url
        return (configured or str(_request(ctx).base_url)).rstrip("/")

    def anonymous_client(self, ctx: Context) -> str | None:
        if self.token(ctx) is not None:
            return None
        request = _request(ctx)
        return request.client.host if request.client else "unknown"


# -- structured answers --------------------------------------------------------------------------------


class OneLineSummary(BaseModel):
    """A paper in one line: Hugging Face's AI summary, or a sentence of the abstract chosen verbatim."""

    text: str
    source: Literal["hugging_face", "extracted"] = Field(
        description="hugging_face: Hugging Face's AI summary; "
        "extracted: a sentence of the abstract, not generated."
    )


def _one_line(paper: Paper) -> OneLineSummary | None:
    found = paper.one_line
    return None if found is None else OneLineSummary(text=found.text, source=found.source)


class PaperItem(BaseModel):
    """One paper in a list: enough to pick it, cite it or ask for more (get_paper)."""

    id: str = Field(description="Paper id (arXiv id without version).")
    title: str
    authors: list[str]
    published: str | None = Field(default=None, description="First version's date, YYYY-MM-DD.")
    upvotes: int | None = Field(
        default=None, description="Upvotes (Hugging Face's plus this instance's readers')."
    )
    url: str = Field(description="The paper's page on this paperfeed instance.")
    listed_on: str | None = Field(default=None, description="Day it was on the daily feed, YYYY-MM-DD.")
    similarity: float | None = Field(default=None, description="Cosine similarity of the embeddings.")
    score: float | None = Field(default=None, description="Ranking score (trending / for-you).")
    reason: str | None = Field(
        default=None, description="Why it is recommended; similar papers: their links in the citation graph."
    )
    summary: OneLineSummary | None = Field(default=None, description="The paper in one line, when known.")
    tags: list[str] | None = Field(default=None, description="The reader's tags on it (library).")
    read: bool | None = Field(default=None, description="Marked read by the reader (library).")


class PaperList(BaseModel):
    papers: list[PaperItem]
    total: int | None = Field(default=None, description="Matches available for paging, when known.")
    offset: int = 0
    notes: list[str] = Field(default_factory=list, description="Caveats, e.g. semantic search unavailable.")


class EvidenceSentence(BaseModel):
    """A sentence of a paper's abstract, verbatim, with the sentences around it and its role."""

    rank: int = Field(description="1-based, over every sentence of the answer.")
    text: str = Field(description="The sentence, quoted verbatim from the abstract.")
    before: str | None = Field(default=None, description="The sentence before it (none: the first).")
    after: str | None = Field(default=None, description="The sentence after it (none: the last).")
    role: Literal["background", "objective", "method", "result", "other"]


class EvidencePaper(BaseModel):
    id: str = Field(description="Paper id (arXiv id without version).")
    title: str
    authors: list[str]
    published: str | None = Field(default=None, description="First version's date, YYYY-MM-DD.")
    url: str = Field(description="The paper's page on this paperfeed instance.")
    sentences: list[EvidenceSentence]


class EvidenceList(BaseModel):
    notice: str = Field(description="What this is: extracted sentences, not generated, and not a verdict.")
    papers: list[EvidencePaper] = Field(description="Papers in the order of their best sentence.")
    notes: list[str] = Field(
        default_factory=list, description="Caveats, e.g. ranking by meaning unavailable."
    )


class FeedList(PaperList):
    period: str | None = Field(
        default=None, description="The day, ISO week or month listed; null for the newest days."
    )
    sort: str


class ForYouList(PaperList):
    mode: str = Field(description="model | similarity | trending (how the reader's feed was ranked).")
    message: str | None = None
    tags: list[str] = Field(description="The reader's tags (pass one as `tag`).")


class PaperInfo(BaseModel):
    id: str
    title: str
    authors: list[str]
    published: str | None = None
    upvotes: int | None = None
    categories: list[str]
    url: str
    arxiv_url: str | None = None
    code: str | None = None
    listed_on: list[str]
    abstract: str
    summary: OneLineSummary | None = None


class LibraryState(BaseModel):
    paper_id: str
    saved: bool
    tags: list[str]
    read: bool
    dismissed: bool


class Alert(BaseModel):
    id: int
    name: str
    query: str
    filters: dict[str, Any]
    page: str = Field(description="The alert's page on this instance (new matches, sign-in needed).")
    rss: str = Field(description="Private RSS feed of the alert's matches (the URL is the secret).")
    atom: str


class GroupInfo(BaseModel):
    id: int
    name: str
    role: str = Field(description="owner | member")
    url: str


class GroupList(BaseModel):
    groups: list[GroupInfo]


class QueuedPaper(BaseModel):
    group_id: int
    paper_id: str
    added_by: str = Field(description="Who queued it first (queueing again keeps the first note).")
    votes: int


def _day(value: datetime | date | None) -> str | None:
    return None if value is None else value.strftime("%Y-%m-%d")


def _item(paper: Paper, site: str, **extra: Any) -> PaperItem:
    return PaperItem(
        id=paper.id,
        title=" ".join(paper.title.split()),
        authors=list(paper.authors),
        published=_day(paper.published),
        upvotes=paper.upvotes,
        url=f"{site}/papers/{paper.id}",
        summary=_one_line(paper),
        **extra,
    )


def _line(n: int, item: PaperItem) -> str:
    """``3. 2503.10613 — Title (2025-03-14, 12 upvotes) — A, B, C et al.`` plus a reason line."""
    facts = [
        f for f in (item.published, None if item.upvotes is None else f"{count(item.upvotes, 'upvote')}") if f
    ]
    if item.similarity is not None:
        facts.append(f"similarity {item.similarity:.2f}")
    if item.tags:
        facts.append("tags: " + ", ".join(item.tags) + (", read" if item.read else ""))
    names = item.authors[:MAX_AUTHORS_SHOWN]
    authors = ", ".join(names) + (" et al." if len(item.authors) > len(names) else "")
    text = f"{n}. {item.id} — {item.title}"
    text += f" ({', '.join(facts)})" if facts else ""
    text += f" — {authors}" if authors else ""
    if item.reason:
        text += f"\n   why: {item.reason}"
    return text


def _answer(heading: str, result: PaperList) -> CallToolResult:
    lines = [heading]
    lines += [_line(result.offset + i + 1, item) for i, item in enumerate(result.papers)]
    if not result.papers:
        lines.append("(no papers)")
    if result.total is not None and result.offset + len(result.papers) < result.total:
        lines.append(f"{result.total - result.offset - len(result.papers)} more: call again with offset.")
    lines += [f"note: {n}" for n in result.notes]
    return _result("\n".join(lines), result)


def _result(text: str, structured: BaseModel) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content=structured.model_dump(mode="json", exclude_none=True),  # unknowns left out
    )


# -- errors a model can act on -------------------------------------------------------------------------

T = TypeVar("T")


def _guard(call: Callable[[], T]) -> T:
    """Turn the domain's refusals into tool errors carrying their (already user-facing) message."""
    try:
        return call()
    except InvalidPaperId as exc:
        raise ToolError(f"{exc} (paper ids look like 2503.10613 or hep-th/9901001)") from None
    except InvalidPeriod as exc:
        raise ToolError(str(exc)) from None
    except (LibraryNotFound, UnknownTag) as exc:
        raise ToolError(str(exc).strip("'\"")) from None
    except InvalidLibraryInput as exc:
        raise ToolError(f"{exc.field}: {exc}") from None
    except (GroupNotFound, GroupForbidden) as exc:
        raise ToolError(str(exc).strip("'\"")) from None
    except InvalidGroupInput as exc:
        raise ToolError(str(exc)) from None
    except StoreValueError:  # a number or text the database cannot hold: the caller's input
        raise ToolError("a value in the arguments is too large or out of range") from None


def _refused(code: str, message: str, **details: Any) -> CallToolResult:
    """A refusal a client can act on (docs/mcp.md, "Errors"): ``isError`` with the message as text, and
    ``structuredContent`` ``{"error": {"code", "message", ...details}}`` -- ``rate_limited`` carries
    ``retry_after`` (seconds). Other tool errors carry text only, so a client tells them apart."""
    body = {"code": code, "message": message, **details}
    return CallToolResult(
        content=[TextContent(type="text", text=message)], structured_content={"error": body}, is_error=True
    )


def _rate_limited(message: str, seconds: float) -> CallToolResult:
    return _refused("rate_limited", message, retry_after=max(1, int(seconds + 0.999)))


def _unknown_paper(paper_id: str) -> ToolError:
    canonical = _guard(lambda: normalize_paper_id(paper_id).base)
    return ToolError(
        f"paper {canonical} is not in this paperfeed instance; find papers with search_papers "
        "(ids look like 2503.10613)"
    )


def _filters(
    date_from: date | None, date_to: date | None, categories: Sequence[str], has_code: bool | None
) -> SearchFilters:
    if date_from and date_to and date_from > date_to:
        raise ToolError(f"date_from ({date_from}) is after date_to ({date_to})")
    cats = tuple(c.strip() for c in categories if c.strip())
    return SearchFilters(date_from, date_to, cats, has_code)


# -- the server ----------------------------------------------------------------------------------------

Limit = Annotated[int, Field(ge=1, le=50, description="How many papers to return (1-50).")]
Offset = Annotated[int, Field(ge=0, le=10_000, description="Skip this many (for the next page).")]
PaperId = Annotated[
    str,
    Field(
        min_length=1,
        max_length=200,
        description="Paper id, e.g. 2503.10613 (a version suffix, arXiv: prefix or arXiv URL also works).",
    ),
]
Categories = Annotated[
    list[str], Field(max_length=20, description="Only papers in any of these arXiv categories, e.g. cs.CL.")
]
GroupId = Annotated[
    int, Field(ge=1, le=MAX_ROW_ID, description="A group id (group_list gives them).")
]  # bounded as the store's ids are: the API answers 400 past them, a tool the same argument error
TagNames = Annotated[list[str], Field(max_length=50, description="Tag names (created when new).")]


def build_server(surface: Surface) -> MCPServer:
    """The paperfeed MCP server, reading the App and the reader through ``surface``."""
    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)
    server: MCPServer = MCPServer(
        "paperfeed", title="paperfeed", instructions=INSTRUCTIONS, version=__version__
    )
    # The SDK's constructor calls logging.basicConfig (root at INFO, a rich handler): logging is the
    # process's business (uvicorn's, the CLI's), so put the root logger back as it was.
    root.setLevel(level)
    root.handlers[:] = handlers

    def open_app(ctx: Context, *, reader_tool: bool = False) -> tuple[App, str]:
        """The App and the site URL; refuses an invalid token, or a missing one where one is needed."""
        app = surface.app(ctx)
        site = surface.site(ctx, app)
        token = surface.token(ctx)
        if token is not None:
            reader(ctx, app, site)  # a presented token must be valid even where none is needed
        elif not reader_tool and surface.require_token(app):
            raise ToolError(
                "this paperfeed instance answers only requests with a personal API token: create one at "
                f"{site}/account (API tokens) and {surface.token_hint}"
            )
        return app, site

    def reader(ctx: Context, app: App, site: str) -> User:
        token = surface.token(ctx)
        if not token:
            raise ToolError(
                f"this tool needs a personal API token: create one at {site}/account (API tokens) and "
                f"{surface.token_hint}"
            )
        user = app.readers.accounts.user_for_api_token(token)
        if user is None:
            raise ToolError(
                "the personal API token is invalid or has been revoked: create a new one at "
                f"{site}/account (API tokens) and {surface.token_hint}"
            )
        return user

    def signed_in(ctx: Context) -> tuple[App, str, User]:
        app, site = open_app(ctx, reader_tool=True)
        return app, site, reader(ctx, app, site)

    def unmuted(
        ctx: Context, app: App, items: Sequence[T], paper_of: Callable[[T], Paper]
    ) -> tuple[list[T], list[str]]:
        """``items`` without the token's reader's muted papers, and a note of how many were left out."""
        token = surface.token(ctx)
        user = app.readers.accounts.user_for_api_token(token) if token else None
        rules = app.readers.mutes.filter_for(user.id if user else None)
        kept, hidden = rules.split(items, paper_of)
        return kept, (
            [f"{count(hidden, 'paper')} hidden by your mute rules (see {surface.site(ctx, app)}/mutes)"]
            if hidden
            else []
        )

    def anonymous_limit(ctx: Context, app: App, site: str) -> CallToolResult | None:
        """A search without a token past its address's limit: the structured ``rate_limited`` refusal."""
        client = surface.anonymous_client(ctx)
        wait = app.search.limiter.wait(client) if client is not None else 0.0
        if wait <= 0:
            return None
        return _rate_limited(
            f"too many searches from your address: try again in {count(max(1, int(wait + 0.999)), 'second')} "
            f"(with a personal API token from {site}/account there is no such limit)",
            wait,
        )

    @server.tool(annotations=READER)
    def search_papers(
        ctx: Context,
        query: Annotated[
            str,
            Field(
                min_length=1,
                max_length=MAX_QUERY_CHARS,
                description='Words (ranked keyword + semantic match), "exact phrase", -excluded, '
                "author:Name, cat:cs.CL, year:2024 or year:2020-2023, after:2023, before:2024-06-01.",
            ),
        ],
        limit: Limit = 10,
        offset: Offset = 0,
        date_from: Annotated[date | None, Field(description="Published on or after, YYYY-MM-DD.")] = None,
        date_to: Annotated[date | None, Field(description="Published on or before, YYYY-MM-DD.")] = None,
        categories: Categories | None = None,
        has_code: Annotated[
            bool | None, Field(description="true: only papers with a code repository.")
        ] = None,
    ) -> Annotated[CallToolResult, PaperList]:
        """Search the papers of this instance (hybrid: BM25 keywords fused with embedding similarity).

        Returns the best matches with id, title, date, upvotes and authors; use get_paper for a paper's
        abstract and details."""
        app, site = open_app(ctx)
        refused = anonymous_limit(ctx, app, site)
        if refused is not None:
            return refused
        filters = _filters(date_from, date_to, categories or (), has_code)
        page = app.search.hybrid.search(query.strip(), filters, limit=limit, offset=offset)
        hits, muted = unmuted(ctx, app, page.hits, lambda h: h.paper)
        papers = [h.paper for h in hits]
        notes = [*page.notes, *filter(None, [app.indexes.coverage.note()]), *muted]
        result = PaperList(
            papers=[_item(p, site) for p in papers], total=page.total, offset=offset, notes=notes
        )
        many = f"The best {count(page.total, 'paper')}" if page.capped else f"{count(page.total, 'paper')}"
        return _answer(f"{many} {agree(page.total, 'matches', 'match')} “{query.strip()}”.", result)

    @server.tool(annotations=READER)
    def search_evidence(
        ctx: Context,
        question: Annotated[
            str,
            Field(
                min_length=1,
                max_length=MAX_QUERY_CHARS,
                description="A question or claim, e.g. 'dropout reduces overfitting in small networks'; "
                'the search syntax works too ("phrase", -word, author:Name, cat:cs.CL, year:2024).',
            ),
        ],
        limit: Annotated[int, Field(ge=1, le=50, description="How many sentences to return (1-50).")] = 10,
        roles: Annotated[
            list[Literal["background", "objective", "method", "result", "other"]] | None,
            Field(max_length=5, description="Only sentences of these roles, e.g. ['result'] (none: all)."),
        ] = None,
        date_from: Annotated[date | None, Field(description="Published on or after, YYYY-MM-DD.")] = None,
        date_to: Annotated[date | None, Field(description="Published on or before, YYYY-MM-DD.")] = None,
        categories: Categories | None = None,
    ) -> Annotated[CallToolResult, EvidenceList]:
        """The sentences of the papers' own abstracts that bear on a question or claim, each quoted
        verbatim with the sentence before and after and its role (background, objective, method, result),
        grouped under their papers, best first. Ranked by words and meaning, with each paper's relevance
        to the whole question; extracted, not generated, and no verdict on the claim."""
        app, site = open_app(ctx)
        refused = anonymous_limit(ctx, app, site)
        if refused is not None:
            return refused
        filters = _filters(date_from, date_to, categories or (), None)
        wanted = frozenset(roles) if roles else None
        page = app.search.evidence.search(question.strip(), filters, wanted, limit=limit)
        groups, muted = unmuted(ctx, app, page.groups, lambda g: g.paper)
        papers = [
            EvidencePaper(
                id=g.paper.id,
                title=" ".join(g.paper.title.split()),
                authors=list(g.paper.authors),
                published=_day(g.paper.published),
                url=f"{site}/papers/{g.paper.id}",
                sentences=[
                    EvidenceSentence(rank=h.rank, text=h.text, before=h.before, after=h.after, role=h.role)
                    for h in g.hits
                ],
            )
            for g in groups
        ]
        result = EvidenceList(notice=EVIDENCE_NOTICE, papers=papers, notes=[*page.notes, *muted])
        lines = [f"Evidence for “{question.strip()}”. {EVIDENCE_NOTICE}"]
        for paper in papers:
            names = paper.authors[:MAX_AUTHORS_SHOWN]
            authors = ", ".join(names) + (" et al." if len(paper.authors) > len(names) else "")
            lines.append(f"\n{paper.id} — {paper.title} ({paper.published or 'undated'}) — {authors}")
            for sentence in paper.sentences:
                lines.append(f"  {sentence.rank}. [{sentence.role}] “{sentence.text}”")
        if not papers:
            lines.append("(no sentences)")
        lines += [f"note: {n}" for n in result.notes]
        return _result("\n".join(lines), result)

    @server.tool(annotations=READER)
    def get_paper(ctx: Context, paper_id: PaperId) -> Annotated[CallToolResult, PaperInfo]:
        """One paper as Markdown: title, authors, dates, links (arXiv, PDF, code), categories, upvotes,
        the days it was on the daily feed, the abstract and, when known, an AI summary and keywords."""
        app, site = open_app(ctx)
        detail = _guard(lambda: app.catalogue.feeds.paper(paper_id))
        if detail is None:
            raise _unknown_paper(paper_id)
        p = detail.paper
        page = f"{site}/papers/{p.id}"
        info = PaperInfo(
            id=p.id,
            title=p.title,
            authors=list(p.authors),
            published=_day(p.published),
            upvotes=p.upvotes,
            categories=list(p.categories),
            url=page,
            arxiv_url=detail.arxiv_url,
            code=p.github_repo,
            listed_on=[d.isoformat() for d in detail.listed_on],
            abstract=p.abstract,
            summary=_one_line(p),
        )
        return _result(paper_markdown(detail, page), info)

    @server.tool(annotations=READER)
    def daily_papers(
        ctx: Context,
        date: Annotated[str | None, Field(max_length=40, description="A day, YYYY-MM-DD.")] = None,
        week: Annotated[
            str | None, Field(max_length=40, description="An ISO week, YYYY-Www (2025-W12).")
        ] = None,
        month: Annotated[str | None, Field(max_length=40, description="A month, YYYY-MM.")] = None,
        sort: Annotated[
            Literal["upvotes", "trending"],
            Field(description="upvotes: most upvoted first; trending: by the trending score."),
        ] = "upvotes",
        limit: Limit = 20,
        offset: Offset = 0,
    ) -> Annotated[CallToolResult, FeedList]:
        """The daily papers feed (papers featured on Hugging Face Daily Papers and this instance) of one
        day, ISO week or month. Give at most one of date, week and month; none gives the latest day."""
        app, site = open_app(ctx)
        given = [name for name, value in (("date", date), ("week", week), ("month", month)) if value]
        if len(given) > 1:
            raise ToolError(f"give only one of date, week and month (got {', '.join(given)})")
        feeds = app.catalogue.feeds

        def read() -> tuple[str, int, Sequence[FeedItem]]:
            if week or month:
                period = parse_week(week) if week else parse_month(month or "")
                feed = feeds.period(period, limit, offset, sort)
                return feed.period.label, feed.total, feed.items
            day = parse_day(date) if date else (feeds.latest_day() or app.catalogue.feeds.clock().date())
            if sort == "trending":
                feed = feeds.period(Period.of("day", day), limit, offset, "trending")
                return feed.period.label, feed.total, feed.items
            got = feeds.day(day, limit=limit, offset=offset)
            return got.day.isoformat(), got.total, got.items

        label, total, found = _guard(read)
        items, muted = unmuted(ctx, app, found, lambda i: i.paper)
        result = FeedList(
            papers=[_item(i.paper, site, listed_on=i.day.isoformat()) for i in items],
            total=total,
            offset=offset,
            period=label,
            sort=sort,
            notes=muted,
        )
        return _answer(f"Daily papers of {label}, by {sort}: {count(total, 'paper')}.", result)

    @server.tool(annotations=READER)
    def trending(ctx: Context, limit: Limit = 20, offset: Offset = 0) -> Annotated[CallToolResult, PaperList]:
        """Papers trending now: upvotes and GitHub stars, decayed by age since they first appeared."""
        app, site = open_app(ctx)
        page = app.catalogue.feeds.trending(limit, offset)
        kept, muted = unmuted(ctx, app, page.items, lambda t: t.paper)
        result = PaperList(
            papers=[_item(t.paper, site, score=round(t.score, 4)) for t in kept],
            total=page.total,
            offset=offset,
            notes=[f"score = {page.formula}", *muted],
        )
        return _answer(f"Trending as of {page.reference_time:%Y-%m-%d %H:%M} UTC.", result)

    @server.tool(annotations=READER)
    def similar_papers(
        ctx: Context,
        paper_id: PaperId,
        limit: Limit = 10,
        facet: Annotated[
            Facet,
            Field(
                description="overall (the default), or background, method or result: papers whose "
                "sentences of that role match this paper's (same problem, same method, same finding)."
            ),
        ] = "overall",
    ) -> Annotated[CallToolResult, PaperList]:
        """Papers most like one paper: embedding neighbours fused with its citation-graph neighbours; each
        paper's ``reason`` says what links them in the graph ("cited together with it by 12 papers"). With
        a facet, papers with the same background, method or result, each with the sentence that matched."""
        app, site = open_app(ctx)
        detail = _guard(lambda: app.catalogue.feeds.paper(paper_id))
        if detail is None:
            raise _unknown_paper(paper_id)
        page = _guard(lambda: app.search.facets.of(detail.paper, facet, limit))
        hits, muted = unmuted(ctx, app, page.hits, lambda h: h.paper)
        items = [
            _item(
                h.paper,
                site,
                similarity=None if h.similarity is None else round(h.similarity, 4),
                reason=f"{page.facet}: “{page.matched[h.paper.id]}”"
                if h.paper.id in page.matched
                else reasons_text(h.reasons),
            )
            for h in hits
        ]
        result = PaperList(papers=items, notes=([page.note] if page.note else []) + muted)
        by = "" if page.facet == "overall" else f" by {page.facet}"
        return _answer(
            f"Papers similar to {detail.paper.id} “{' '.join(detail.paper.title.split())}”{by}:", result
        )

    @server.tool(annotations=READER)
    def for_you(
        ctx: Context,
        limit: Limit = 20,
        tag: Annotated[
            str | None, Field(max_length=60, description="Rank for one of the reader's tags instead.")
        ] = None,
    ) -> Annotated[CallToolResult, ForYouList]:
        """The reader's "For you" feed: recent papers ranked by a model of what they saved, followed and
        searched for, each with one line on why. Needs a personal API token."""
        app, site, user = signed_in(ctx)
        feed = _guard(lambda: app.readers.recommendations.feed(user.id, limit=limit * 2, tag=tag or None))
        recs, muted = unmuted(ctx, app, feed.items, lambda r: r.paper)
        result = ForYouList(
            papers=[_item(r.paper, site, score=round(r.score, 3), reason=r.reason) for r in recs[:limit]],
            mode=feed.mode,
            message=feed.message,
            tags=list(feed.tags),
            notes=[*([feed.message] if feed.message else []), *muted],
        )
        first, last = feed.window
        return _answer(f"For you ({feed.mode}), papers of {first} … {last}:", result)

    @server.tool(annotations=READER)
    def library_list(
        ctx: Context,
        tag: Annotated[
            str | None, Field(max_length=60, description="Only papers under this tag name.")
        ] = None,
        read: Annotated[Literal["all", "read", "unread"], Field(description="Filter by read mark.")] = "all",
        limit: Limit = 20,
        offset: Offset = 0,
    ) -> Annotated[CallToolResult, PaperList]:
        """The reader's saved papers (their library), last saved first, with their tags. Needs a personal
        API token."""
        app, site, user = signed_in(ctx)
        lib = app.readers.library
        tag_id = None
        if tag:
            tags = lib.tags(user.id)
            found = next((t for t in tags if t.name.casefold() == tag.strip().casefold()), None)
            if found is None:
                names = ", ".join(t.name for t in tags) or "none yet"
                raise ToolError(f"you have no tag named {tag.strip()!r} (your tags: {names})")
            tag_id = found.id
        page = _guard(lambda: lib.library(user.id, tag_id=tag_id, read=read, limit=limit, offset=offset))
        items = [_item(e.paper, site, tags=list(e.item.tags), read=e.item.read) for e in page.entries]
        result = PaperList(papers=items, total=page.total, offset=offset)
        return _answer(
            f"Your library{f' (tag {tag.strip()})' if tag else ''}: {count(page.total, 'paper')}.", result
        )

    @server.tool(annotations=READER)
    def library_search(
        ctx: Context,
        query: Annotated[
            str,
            Field(
                min_length=1,
                max_length=250,
                description="Words of a private note, a tag, a title or an author, or what a paper is about.",
            ),
        ],
        limit: Limit = 10,
    ) -> Annotated[CallToolResult, PaperList]:
        """Search the reader's own library: their saved papers, tag names and private notes, by words and by
        meaning (hybrid, like search_papers). Each result says what matched. Needs a personal API token."""
        app, site, user = signed_in(ctx)
        try:
            found = _guard(lambda: app.readers.library_search.search(user.id, query, limit=limit))
        except LibrarySearchLimited as exc:
            return _rate_limited(str(exc), exc.retry_after)
        items = [
            _item(h.paper, site, tags=list(h.tags), reason="matched: " + ", ".join(h.matched))
            for h in found.hits
        ]
        result = PaperList(papers=items, total=len(items), notes=list(found.notes))
        return _answer(
            f"{len(items)} of the {count(found.searched, 'paper')} of your library "
            f"{agree(len(items), 'matches', 'match')} “{found.query}”.",
            result,
        )

    def state_answer(verb: str, state: PaperState) -> CallToolResult:
        out = LibraryState(
            paper_id=state.paper_id,
            saved=state.saved,
            tags=list(state.tags),
            read=state.read,
            dismissed=state.dismissed,
        )
        where = f"tags: {', '.join(state.tags)}" if state.tags else "not in your library"
        return _result(f"{verb} {state.paper_id} ({where}).", out)

    @server.tool(annotations=CHANGES)
    def library_add(
        ctx: Context,
        paper_id: PaperId,
        tags: Annotated[
            list[str], Field(max_length=50, description=f"Tags to file it under (default {DEFAULT_TAG!r}).")
        ] = [DEFAULT_TAG],  # noqa: B006 - pydantic copies defaults; the schema shows it
    ) -> Annotated[CallToolResult, LibraryState]:
        """Save a paper to the reader's library under these tags (added to any it already has). Saved
        papers teach the reader's "For you" feed. Needs a personal API token."""
        app, _, user = signed_in(ctx)
        state = _guard(lambda: app.readers.library.save(user.id, paper_id, tags or [DEFAULT_TAG]))
        return state_answer("Saved", state)

    @server.tool(
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=False)
    )
    def library_tag(
        ctx: Context, paper_id: PaperId, tags: TagNames
    ) -> Annotated[CallToolResult, LibraryState]:
        """Set exactly these tags on a paper in the reader's library (replacing its tags; an empty list
        removes the paper from the library). To add tags without removing any, use library_add. Needs a
        personal API token."""
        app, _, user = signed_in(ctx)
        state = _guard(lambda: app.readers.library.set_tags(user.id, paper_id, tags))
        return state_answer("Tagged", state)

    @server.tool(annotations=CHANGES)
    def subscribe_alert(
        ctx: Context,
        name: Annotated[str, Field(min_length=1, max_length=100, description="A name for the alert.")],
        query: Annotated[
            str, Field(min_length=1, max_length=MAX_QUERY_CHARS, description="A search_papers query.")
        ],
        date_from: Annotated[date | None, Field(description="Published on or after, YYYY-MM-DD.")] = None,
        date_to: Annotated[date | None, Field(description="Published on or before, YYYY-MM-DD.")] = None,
        categories: Categories | None = None,
        has_code: Annotated[
            bool | None, Field(description="true: only papers with a code repository.")
        ] = None,
    ) -> Annotated[CallToolResult, Alert]:
        """Save a search as an alert for the reader: new matching papers appear on the alert's page and
        private RSS/Atom feed, in the reader's email digest (if subscribed) and boost their "For you"
        feed. Needs a personal API token."""
        app, site, user = signed_in(ctx)
        filters = _filters(date_from, date_to, categories or (), has_code)
        lib = app.readers.library
        saved = _guard(lambda: lib.add_search(user.id, name, query, filters))
        secret = lib.feed_token(user.id, saved.id)
        alert = Alert(
            id=saved.id,
            name=saved.name,
            query=saved.query,
            filters={  # the ones given
                key: value
                for key, value in (
                    ("date_from", _day(filters.date_from)),
                    ("date_to", _day(filters.date_to)),
                    ("categories", list(filters.categories) or None),
                    ("has_code", filters.has_code),
                )
                if value is not None
            },
            page=f"{site}/library/searches/{saved.id}",
            rss=f"{site}/rss/alerts/{secret}",
            atom=f"{site}/atom/alerts/{secret}",
        )
        text = (
            f"Alert {saved.id} “{saved.name}” saved for the query “{saved.query}”. New matches: "
            f"{alert.page} (feed: {alert.rss})."
        )
        return _result(text, alert)

    @server.tool(annotations=READER)
    def group_list(ctx: Context) -> Annotated[CallToolResult, GroupList]:
        """The reader's reading groups (id, name, their role), to pass a group_id to the group tools.
        Needs a personal API token."""
        app, site, user = signed_in(ctx)
        found = [
            GroupInfo(id=g.id, name=g.name, role=m.role, url=f"{site}/groups/{g.id}")
            for g, m in app.readers.groups.groups(user.id)
        ]
        lines = [f"{g.id}. {g.name} ({g.role})" for g in found] or ["(you are in no group)"]
        return _result("Your groups:\n" + "\n".join(lines), GroupList(groups=found))

    @server.tool(annotations=READER)
    def group_queue(ctx: Context, group_id: GroupId) -> Annotated[CallToolResult, PaperList]:
        """A group's shared queue of papers, most voted first, with who added each and why. Needs a
        personal API token of a member."""
        app, site, user = signed_in(ctx)
        shown = _guard(lambda: app.readers.groups.page(user.id, group_id))
        items = [
            _item(
                q.paper,
                site,
                score=float(q.entry.votes),
                reason=f"added by {q.entry.added_by_name}" + (f": {q.entry.note}" if q.entry.note else ""),
            )
            for q in shown.by_votes
        ]
        return _answer(f"The queue of “{shown.group.name}” (score = votes):", PaperList(papers=items))

    @server.tool(annotations=CHANGES)
    def group_queue_add(
        ctx: Context,
        group_id: GroupId,
        paper_id: PaperId,
        note: Annotated[str, Field(max_length=2000, description="Why the group should read it.")] = "",
    ) -> Annotated[CallToolResult, QueuedPaper]:
        """Queue a paper for one of the reader's reading groups, with a note; the members vote on the
        queue for the next journal club. Needs a personal API token of a member."""
        app, _, user = signed_in(ctx)
        entry = _guard(lambda: app.readers.groups.queue_add(user.id, group_id, paper_id, note))
        out = QueuedPaper(
            group_id=group_id, paper_id=entry.paper_id, added_by=entry.added_by_name, votes=entry.votes
        )
        return _result(f"Queued {entry.paper_id} for group {group_id} ({count(entry.votes, 'vote')}).", out)

    @server.resource(
        "paper://{+paper_id}",
        name="paper",
        title="A paper as Markdown",
        description="One paper of this instance as Markdown (what get_paper returns), e.g. paper://2503.10613.",
        mime_type="text/markdown",
    )
    def paper_resource(paper_id: str, ctx: Context) -> str:
        try:
            app, site = open_app(ctx)
            detail = _guard(lambda: app.catalogue.feeds.paper(paper_id))
        except ToolError as exc:
            raise ResourceError(str(exc)) from None
        if detail is None:
            raise ResourceNotFoundError(str(_unknown_paper(paper_id)))
        return paper_markdown(detail, f"{site}/papers/{detail.paper.id}")

    return server


def stdio_server(app: App, token: str | None) -> MCPServer:
    """The server of ``paperfeed mcp``: ``app`` and the reader's ``token`` fixed for the process."""
    return build_server(_Stdio(app, token or None))


class HttpEndpoint:
    """The ``/mcp`` route of the web app (an ASGI app): streamable HTTP, stateless, JSON answers.

    ``create_app`` mounts it and enters :meth:`running` in its lifespan; each lifespan gets a fresh session
    manager (the SDK's runs once), so a web app can be started again (tests do)."""

    def __init__(self, refuse: Refusal) -> None:
        """``refuse`` answers a request this endpoint does not take (the web's error reply, so a 405
        here has the shape and headers of every other error of the site)."""
        self.server = build_server(_Http())
        self._refuse = refuse
        self._manager: StreamableHTTPSessionManager | None = None

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        # No Host/Origin allow-list: that guards servers trusting ambient access on localhost; this one
        # trusts only Bearer tokens (no cookies), so a browser page gains nothing it cannot read from the
        # public JSON API.
        self.server.streamable_http_app(
            streamable_http_path="/mcp",
            stateless_http=True,
            json_response=True,
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )
        manager = self.server.session_manager
        async with manager.run():
            self._manager = manager
            try:
                yield
            finally:
                self._manager = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self._manager is None:  # pragma: no cover - only outside the app's lifespan
            raise RuntimeError("the MCP endpoint is not running: enter HttpEndpoint.running() first")
        if scope.get("method") != "POST":
            # Stateless and JSON-answering: every message is a POST. The SDK would answer a GET with a
            # server-sent event stream that stays open (for server-initiated messages this server never
            # sends), so anyone could hold connections open for free; the spec allows a 405 instead.
            await self._only_post(scope, receive, send)
            return
        await self._manager.handle_request(scope, receive, send)

    async def _only_post(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        message = (
            f"{request.method} is not used here: send each JSON-RPC message to /mcp with POST (this "
            "endpoint is stateless and answers in JSON, without event streams or sessions)"
        )
        await self._refuse(request, 405, message, {"Allow": "POST"})(scope, receive, send)
