"""The arXiv API (``export.arxiv.org/api/query``): papers by id list or by search query, paged.

Every request goes through :class:`~paperfeed.adapters.sources.http.PoliteClient`, which spaces
requests to arXiv's host (3 s by default) and retries; this module only builds requests, pages, and
turns each response into a :class:`~paperfeed.domain.ingest.Batch` via :mod:`.arxiv_atom`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

from paperfeed.domain.errors import ArxivApiError, MalformedFeed
from paperfeed.domain.fill import ListingState, listing_key
from paperfeed.domain.ids import InvalidPaperId, parse_arxiv_id
from paperfeed.domain.ingest import Batch, Reject

from .arxiv_atom import SOURCE_NAME, FeedPage, parse_feed
from .http import PoliteClient

__all__ = ["MAX_IDS_PER_REQUEST", "SORT_BY", "ArxivApiClient", "ArxivApiSource", "ArxivListingSource"]

MAX_IDS_PER_REQUEST = 100
MAX_PAGE_SIZE = 2000  # arXiv refuses larger slices
SORT_BY = ("relevance", "lastUpdatedDate", "submittedDate")
SORT_ORDER = ("ascending", "descending")


def _utc_now() -> datetime:
    return datetime.now(UTC)


def _id_key(raw: str) -> str:
    """The key an entry for ``raw`` is found under: its version-less id, or the text as given."""
    try:
        return parse_arxiv_id(raw).base
    except InvalidPaperId:
        return raw.strip()


@dataclass
class ArxivApiClient:
    """Fetches pages from the arXiv API; knows nothing about storage."""

    http: PoliteClient
    url: str  # PAPERFEED_ARXIV_API_URL
    now: Callable[[], datetime] = _utc_now

    def papers(self, ids: Sequence[str]) -> ArxivApiSource:
        """The :class:`~paperfeed.domain.ports.PaperFetcher` port: a source importing ``ids``."""
        return ArxivApiSource(self, ids=tuple(ids))

    def fetch_page(self, params: dict[str, str]) -> FeedPage:
        """One request. arXiv sends its error feed with HTTP 400, so that status is read, not retried.

        Raises :class:`ArxivApiError` (arXiv rejected the request),
        :class:`~.arxiv_atom.MalformedFeed` (the answer is not a feed) and
        :class:`~.http.SourceUnavailable` (arXiv could not be reached).
        """
        response = self.http.get(self.url, params, ok_statuses=frozenset({400}))
        where = f"arXiv API response for {response.request.url}"
        try:
            page = parse_feed(response.content, seen_at=self.now(), where=where)
        except MalformedFeed:
            if response.status_code == 400:
                raise ArxivApiError(f"arXiv answered HTTP 400 for {response.request.url}") from None
            raise
        if response.status_code == 400:
            raise ArxivApiError(f"arXiv answered HTTP 400 for {response.request.url}")
        return page

    def by_ids(self, ids: Sequence[str], *, chunk_size: int = MAX_IDS_PER_REQUEST) -> Iterator[Batch]:
        """One batch per chunk of at most ``chunk_size`` ids; an id arXiv does not have is a reject.

        Id lists are never paged: the old API counted unknown ids in ``totalResults``, so paging on it
        fetched known papers twice.
        """
        if not 1 <= chunk_size <= MAX_IDS_PER_REQUEST:
            raise ValueError(f"chunk_size must be 1..{MAX_IDS_PER_REQUEST}, got {chunk_size}")
        unique = list(dict.fromkeys(i.strip() for i in ids if i.strip()))
        done = 0
        for first in range(0, len(unique), chunk_size):
            chunk = unique[first : first + chunk_size]
            params = {"id_list": ",".join(chunk), "start": "0", "max_results": str(len(chunk))}
            page = self.fetch_page(params)
            found = set(page.entry_ids)
            missing = [Reject(raw, "not found on arXiv", "id") for raw in chunk if _id_key(raw) not in found]
            done += len(chunk)
            yield Batch(papers=page.papers, rejects=page.rejects + missing, position=done, total=len(unique))

    def search(
        self,
        query: str,
        start: int = 0,
        max_results: int | None = None,
        *,
        page_size: int = 100,
        sort_by: str = "relevance",
        sort_order: str = "descending",
    ) -> Iterator[Batch]:
        """Page through a ``search_query`` from ``start`` until ``max_results`` papers or the end.

        The end is ``totalResults`` or a page with no entries (arXiv occasionally sends one mid-way;
        stopping beats looping on it).
        """
        if not query.strip():
            raise ValueError("empty search query")
        if start < 0 or (max_results is not None and max_results < 0):
            raise ValueError("start and max_results must not be negative")
        if not 1 <= page_size <= MAX_PAGE_SIZE:
            raise ValueError(f"page_size must be 1..{MAX_PAGE_SIZE}, got {page_size}")
        if sort_by not in SORT_BY or sort_order not in SORT_ORDER:
            raise ValueError(f"sort_by must be one of {SORT_BY}, sort_order one of {SORT_ORDER}")
        position, taken, total = start, 0, None
        while max_results is None or taken < max_results:
            want = page_size if max_results is None else min(page_size, max_results - taken)
            params = {
                "search_query": query,
                "start": str(position),
                "max_results": str(want),
                "sortBy": sort_by,
                "sortOrder": sort_order,
            }
            page = self.fetch_page(params)
            if page.total_results is not None:
                total = page.total_results
            if page.entries == 0:
                break
            # A server sending more than asked for must not push us past the caller's limit.
            papers, rejects = page.papers, page.rejects
            if page.entries > want:
                papers = papers[:want]
                rejects = rejects[: want - len(papers)]
            position += min(page.entries, want)
            taken += min(page.entries, want)
            goal = max(0, total - start) if total is not None else None
            if max_results is not None:
                goal = max_results if goal is None else min(goal, max_results)
            yield Batch(papers=papers, rejects=rejects, position=taken, total=goal)
            if total is not None and position >= total:
                break


@dataclass
class ArxivApiSource:
    """A :class:`~paperfeed.domain.ports.PaperSource` for one id-list fetch or one search query."""

    client: ArxivApiClient
    ids: tuple[str, ...] = ()
    query: str | None = None
    start: int = 0
    max_results: int | None = None
    page_size: int = 100
    sort_by: str = "relevance"
    sort_order: str = "descending"

    def __post_init__(self) -> None:
        if bool(self.ids) == bool(self.query):
            raise ValueError("give either ids or a query")

    @property
    def name(self) -> str:
        return SOURCE_NAME

    @property
    def checkpoint_name(self) -> str | None:
        return None  # ad-hoc fetches are cheap to repeat and idempotent in the store

    def batches(self, resume_from: str | None = None) -> Iterator[Batch]:
        if self.ids:
            yield from self.client.by_ids(self.ids)
            return
        assert self.query is not None
        yield from self.client.search(
            self.query,
            self.start,
            self.max_results,
            page_size=self.page_size,
            sort_by=self.sort_by,
            sort_order=self.sort_order,
        )


@dataclass
class ArxivListingSource:
    """The newest submissions of one arXiv category, newest first, back to a floor: a resumable source.

    Pages ``search_query=cat:<category>`` sorted by ``submittedDate`` descending. The pass stops at the
    first page reaching a submission older than its floor — the window's start, or a day before the
    newest submission the last completed pass reached (papers held in moderation appear late) — after
    ``max_results`` entries, or at the end of the list. Each page commits with the pass's offset, so a
    killed pass resumes at the next page (papers announced meanwhile shift the list down: a few entries
    are read twice and merge unchanged, none are skipped). The final batch records the new high-water
    mark and when the pass completed (:class:`~paperfeed.domain.fill.ListingState`).
    """

    client: ArxivApiClient
    category: str
    since: datetime  # the window's start: older submissions are not wanted
    max_results: int = 1000
    page_size: int = 200
    overlap: timedelta = timedelta(days=1)
    clock: Callable[[], datetime] | None = None  # when a pass completes (default: the client's clock)

    def __post_init__(self) -> None:
        if not 1 <= self.page_size <= MAX_PAGE_SIZE:
            raise ValueError(f"page_size must be 1..{MAX_PAGE_SIZE}, got {self.page_size}")
        if self.max_results < 1:
            raise ValueError(f"max_results must be at least 1, got {self.max_results}")

    @property
    def name(self) -> str:
        return SOURCE_NAME

    @property
    def checkpoint_name(self) -> str:
        return listing_key(self.category)

    def _params(self, offset: int, want: int) -> dict[str, str]:
        return {
            "search_query": f"cat:{self.category}",
            "start": str(offset),
            "max_results": str(want),
            "sortBy": "submittedDate",
            "sortOrder": "descending",
        }

    def batches(self, resume_from: str | None = None) -> Iterator[Batch]:
        saved = ListingState.loads(resume_from)
        if saved.offset is not None and saved.floor is not None:  # a pass in progress: go on with it
            offset, floor, newest = saved.offset, saved.floor, saved.newest
        else:
            offset, newest = 0, None
            floor = self.since if saved.high is None else max(self.since, saved.high - self.overlap)
        pages_total = -(-self.max_results // self.page_size)
        while offset < self.max_results:
            want = min(self.page_size, self.max_results - offset)
            page = self.client.fetch_page(self._params(offset, want))
            if page.entries == 0:
                break
            times = [p.published for p in page.papers if p.published is not None]
            if times and (newest is None or max(times) > newest):
                newest = max(times)
            papers = [p for p in page.papers if p.published is None or p.published >= floor]
            offset += min(page.entries, want)
            reached_floor = any(t < floor for t in times)
            at_end = page.total_results is not None and offset >= page.total_results
            state = replace(saved, offset=offset, floor=floor, newest=newest)
            yield Batch(
                papers=papers,
                rejects=page.rejects,
                checkpoint=(self.checkpoint_name, state.dumps()),
                position=-(-offset // self.page_size),
                total=pages_total,
            )
            if reached_floor or at_end:
                break
        marks = [t for t in (saved.high, newest) if t is not None]
        now = (self.clock or self.client.now)()
        done = ListingState(high=max(marks) if marks else None, completed_at=now)
        yield Batch(checkpoint=(self.checkpoint_name, done.dumps()), position=pages_total, total=pages_total)
