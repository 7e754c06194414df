"""The arXiv OAI-PMH harvester: ``ListRecords`` pages as checkpointed batches.

State kept in the store's checkpoint table (both values are JSON):

* Progress, one row per harvest, key ``oai:<endpoint>:<format>:<set>:<from>:<until>`` (empty parts for
  options not given): ``{"from", "resumptionToken", "datestamp", "cursor", "completeListSize",
  "position", "done"}``. Each page's papers and this row commit in one transaction, so a killed harvest
  re-run with the same options asks for exactly the page after the last committed one. A finished
  harvest (``done``) is simply run again from its start if asked for again.
* High-water mark, key ``oai-highwater:<endpoint>:<format>:<set>``: ``{"datestamp", "completed_at"}``,
  the highest record datestamp seen by a *completed* harvest (never moves back). ``harvest arxiv``
  without ``--from`` harvests from that day on. ``from`` is inclusive and arXiv datestamps are days, so
  that day is fetched again: records stamped later that same day are not missed, and records already
  stored merge without change. ``--restart`` ignores both rows (the new harvest overwrites progress).

Resumption tokens expire on the server. When a *saved* token is refused with ``badResumptionToken``,
the harvest starts its list again from its own ``from`` (the saved high-water mark or ``--from``), not
from the highest datestamp seen so far: OAI-PMH does not order records by datestamp (arXiv orders them
by identifier), so resuming "after the latest date seen" could silently skip records.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import orjson

from paperfeed.domain.errors import OaiError
from paperfeed.domain.ingest import Batch
from paperfeed.domain.ports import PaperStore

from .http import PoliteClient
from .oai_pmh import SOURCE, OaiPage, OaiProtocolError, fetch_page, list_params

__all__ = ["ArxivOaiSource", "HarvestReport", "checkpoint_key", "highwater_key", "plan_harvest"]

_MAX_KEY = 200  # the checkpoints.name column


def _fit(key: str) -> str:
    """Keep a checkpoint key within the column; long endpoints are shortened with a hash."""
    if len(key) <= _MAX_KEY:
        return key
    digest = hashlib.blake2b(key.encode(), digest_size=8).hexdigest()
    return f"{key[: _MAX_KEY - 17]}#{digest}"


def checkpoint_key(
    endpoint: str, metadata_prefix: str, set_spec: str | None, from_date: str | None, until: str | None
) -> str:
    return _fit(f"oai:{endpoint}:{metadata_prefix}:{set_spec or ''}:{from_date or ''}:{until or ''}")


def highwater_key(endpoint: str, metadata_prefix: str, set_spec: str | None) -> str:
    return _fit(f"oai-highwater:{endpoint}:{metadata_prefix}:{set_spec or ''}")


def _day(datestamp: str | None) -> str | None:
    """OAI ``from`` in day granularity, which every repository must accept."""
    return datestamp[:10] if datestamp else None


def _ignore(_message: str) -> None:
    return None


@dataclass(slots=True)
class HarvestReport:
    """What a harvest did beyond the store's counts, for the CLI summary."""

    pages: int = 0
    records: int = 0
    deleted: int = 0
    resumed_from: str | None = None  # the saved token this run started with
    restarted: bool = False  # a saved token had expired
    highwater: str | None = None


@dataclass(slots=True)
class _State:
    from_date: str | None
    token: str | None = None
    datestamp: str | None = None
    cursor: int | None = None
    total: int | None = None
    position: int = 0
    done: bool = False

    def dumps(self) -> str:
        return orjson.dumps(
            {
                "from": self.from_date,
                "resumptionToken": self.token,
                "datestamp": self.datestamp,
                "cursor": self.cursor,
                "completeListSize": self.total,
                "position": self.position,
                "done": self.done,
            }
        ).decode()


@dataclass
class ArxivOaiSource:
    """A :class:`~paperfeed.domain.ports.PaperSource` harvesting ``ListRecords`` from an OAI endpoint."""

    http: PoliteClient
    endpoint: str
    metadata_prefix: str = "arXiv"
    set_spec: str | None = None
    from_date: str | None = None
    until: str | None = None
    previous_highwater: str | None = None
    notify: Callable[[str], None] = _ignore
    now: datetime = field(default_factory=lambda: datetime.now(UTC))
    report: HarvestReport = field(default_factory=HarvestReport)

    @property
    def name(self) -> str:
        return SOURCE

    @property
    def checkpoint_name(self) -> str:
        return checkpoint_key(self.endpoint, self.metadata_prefix, self.set_spec, self.from_date, self.until)

    def _load(self, saved: str | None) -> _State:
        fresh = _State(self.from_date)
        if not saved:
            return fresh
        try:
            value: Any = orjson.loads(saved)
        except orjson.JSONDecodeError:
            self.notify(f"ignoring unreadable saved harvest state {saved[:60]!r}; starting over")
            return fresh
        if not isinstance(value, dict) or value.get("done") or not value.get("resumptionToken"):
            return fresh  # nothing to resume: a finished harvest runs again from its start
        return _State(
            from_date=value.get("from", self.from_date),
            token=str(value["resumptionToken"]),
            datestamp=value.get("datestamp"),
            cursor=value.get("cursor"),
            total=value.get("completeListSize"),
            position=int(value.get("position") or 0),
        )

    def _first_request(self, state: _State) -> dict[str, str]:
        if state.token:
            return {"verb": "ListRecords", "resumptionToken": state.token}
        return list_params(
            "ListRecords",
            self.metadata_prefix,
            from_date=_day(state.from_date),
            until=self.until,
            set_spec=self.set_spec,
        )

    def batches(self, resume_from: str | None = None) -> Iterator[Batch]:
        """One batch per page, its checkpoint naming the next page; then the high-water mark."""
        state = self._load(resume_from)
        self.report.resumed_from = state.token
        if state.token:
            of = f" of {state.total:,}" if state.total is not None else ""
            self.notify(
                f"resuming an interrupted harvest after record {state.position:,}{of} "
                f"(resumption token {state.token!r})"
            )
        request = self._first_request(state)
        while True:
            try:
                page = fetch_page(self.http, self.endpoint, request, seen_at=self.now)
            except OaiError as exc:
                if (
                    exc.code == "badResumptionToken"
                    and state.token
                    and state.token == self.report.resumed_from
                ):
                    self.report.restarted = True
                    since = _day(state.from_date) or "the beginning"
                    self.notify(
                        f"the saved resumption token {state.token!r} has expired on the server "
                        f"(badResumptionToken); restarting this harvest from {since}. Papers already "
                        "stored are merged, not duplicated."
                    )
                    kept = state.datestamp
                    state = _State(state.from_date, datestamp=kept)
                    self.report.resumed_from = None
                    request = self._first_request(state)
                    continue
                raise
            yield self._batch(state, page)
            if state.done:
                break
            request = {"verb": "ListRecords", "resumptionToken": str(state.token)}
        final = self._highwater_batch(state)
        if final.checkpoint is not None:
            yield final

    def _batch(self, state: _State, page: OaiPage) -> Batch:
        self.report.pages += 1
        self.report.records += page.records
        self.report.deleted += len(page.deleted)
        if page.max_datestamp and (state.datestamp is None or page.max_datestamp > state.datestamp):
            state.datestamp = page.max_datestamp
        resumption = page.resumption
        if resumption is not None and resumption.cursor is not None:
            state.position = resumption.cursor + page.records
        else:
            state.position += page.records
        if resumption is not None and resumption.complete_list_size is not None:
            state.total = resumption.complete_list_size
        state.cursor = resumption.cursor if resumption else None
        next_token = page.next_token
        if next_token is not None and next_token == state.token:
            raise OaiProtocolError(f"{self.endpoint} answered resumption token {next_token!r} with itself")
        state.token = next_token
        state.done = next_token is None
        return Batch(
            papers=page.papers,
            rejects=page.rejects,
            checkpoint=(self.checkpoint_name, state.dumps()),
            position=state.position,
            total=state.total if state.total is not None else (state.position if state.done else None),
        )

    def _highwater_batch(self, state: _State) -> Batch:
        marks = [d for d in (self.previous_highwater, state.datestamp) if d]
        highwater = max(marks) if marks else None
        self.report.highwater = highwater
        batch = Batch(position=state.position, total=state.total or state.position)
        if highwater is not None:
            value = {"datestamp": highwater, "completed_at": datetime.now(UTC).isoformat()}
            key = highwater_key(self.endpoint, self.metadata_prefix, self.set_spec)
            batch.checkpoint = (key, orjson.dumps(value).decode())
        return batch


def saved_highwater(
    store: PaperStore, endpoint: str, metadata_prefix: str, set_spec: str | None
) -> str | None:
    """The datestamp a completed harvest with these options reached, if any."""
    raw = store.get_checkpoint(highwater_key(endpoint, metadata_prefix, set_spec))
    if not raw:
        return None
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    stamp = value.get("datestamp") if isinstance(value, dict) else None
    return stamp if isinstance(stamp, str) and stamp else None


def plan_harvest(
    http: PoliteClient,
    store: PaperStore,
    endpoint: str,
    *,
    metadata_prefix: str = "arXiv",
    set_spec: str | None = None,
    from_date: str | None = None,
    until: str | None = None,
    restart: bool = False,
    notify: Callable[[str], None] = _ignore,
) -> ArxivOaiSource:
    """Build the harvest the options ask for; without ``from_date`` continue from the high-water mark."""
    previous = saved_highwater(store, endpoint, metadata_prefix, set_spec)
    start = from_date if (from_date or restart) else _day(previous)
    if start and until and not from_date and start > until[:10]:
        start = None  # "--until X" alone asks for everything up to X, even below the mark
    return ArxivOaiSource(
        http=http,
        endpoint=endpoint,
        metadata_prefix=metadata_prefix,
        set_spec=set_spec,
        from_date=start,
        until=until,
        previous_highwater=previous,
        notify=notify,
    )
