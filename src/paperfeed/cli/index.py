"""``paperfeed index``: embed new and changed papers, then refresh the vector index.

``--follow`` is the long-lived indexer that ``paperfeed run`` supervises: it embeds the backlog in slices
(each committed, the vector index saved after each), then waits for new papers instead of exiting.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from types import FrameType
from typing import TYPE_CHECKING, Annotated

import typer

from paperfeed.domain.calibration import AGREEMENT_FLOOR
from paperfeed.domain.embedding import MAX_WORKERS
from paperfeed.domain.errors import EmbedderUnavailable, StoreError
from paperfeed.domain.indexing_status import describe_duration
from paperfeed.domain.wording import agree, count, every

from .context import Context, fail
from .progress import LINE_EVERY, Heartbeat, RichProgress

if TYPE_CHECKING:
    from paperfeed.domain.calibration import Calibration
    from paperfeed.domain.indexing_status import IndexerState
    from paperfeed.services.indexer_status import IndexerReporter
    from paperfeed.services.indexing import IndexingService, IndexingSummary

    from .stop_watch import StopWatch

FOLLOW_SLICE = 2000


def _follow(c: Context, *, slice_size: int, poll: float, batch_size: int | None, nice: int) -> None:
    """Embed the backlog slice by slice, then poll for new papers, until SIGTERM/SIGINT: stopped within a
    few seconds wherever it is (:mod:`.stop_watch`), with one final line saying what is left. A heartbeat
    line comes at least every 30 s while it works (:class:`~.progress.Heartbeat`)."""
    from .stop_watch import StopWatch

    if nice:
        with contextlib.suppress(OSError):
            os.nice(nice)  # the web server and the scheduler come first
    c.app.indexes.embed_in_background()  # the model in a child process, ended when idle: idle is cheap
    c.app.indexes.embedders.defer_calibration()  # a machine's first start: vectors first, timings when idle

    def say(text: str) -> None:
        c.console.print(text, highlight=False, markup=False, soft_wrap=True)
        heartbeat.said()

    # ``watch.doing``: the work in hand, for the heartbeat's "still …" and a forced stop's final line
    watch = StopWatch(say, _forced_stop)
    stopping = watch.requested
    heartbeat = Heartbeat(say, lambda: watch.doing).start()  # a line at least every 30 s while it works

    from paperfeed.services.jobs import holder_is_dead

    service: IndexingService | None = None  # none until papers come: a stop meanwhile has nothing pending
    try:
        indexer = c.app.indexes.indexer
        if not indexer.has_papers():  # an empty store: no backend measured, no model loaded until papers come
            say(idle_message(0, poll))
            indexer.report_idle()  # readers: an indexer runs, waiting for papers
            watch.doing = None
            while not indexer.has_papers() and not stopping.wait(poll):
                pass
        if not stopping.is_set():
            watch.doing = "getting the embedder ready"
            service = c.app.indexes.indexer.current()
            say(service.plan().message())
            watch.doing = "bringing evidence search's sentence indexes up to date"
            # sentences stored before (or by a killed run) reach the sentence indexes
            catch_up_evidence(c, say)
        waiting = ""
        topics_due = True  # once at start (papers embedded before), then after each round that embedded
        topics: threading.Thread | None = None  # the topics step, run beside the papers' vectors
        while service is not None and not stopping.is_set():
            watch.doing = None
            if c.app.indexes.embedders.follow():  # `paperfeed model adapt` adopted another meanwhile
                watch.doing = "getting the newly adopted embedder ready"
                service = c.app.indexes.indexer.current()
                say(f"the embedding model changed: {service.plan().message()}")
            held = c.app.maintenance.jobs.lease("job:daily")
            if held is not None and held[1] > datetime.now(UTC) and not holder_is_dead(held[0]):
                if waiting != "daily":  # the daily job embeds too: one writer of the vector index
                    say("the daily job is running and indexes too: waiting for it to finish")
                    waiting = "daily"
                stopping.wait(poll)
                continue
            plan = service.plan()
            # Order by dependency, the cheapest useful result first (issue #39): the papers' vectors (and,
            # in the same forward pass, their sentences), which search reads seconds after each batch;
            # then topics and the map, once the vectors cover what arrived; then the sentences' backlog
            # (papers embedded without theirs), a slice that yields as soon as a paper needs its vector.
            # The topics build runs on a thread of its own (its work in a child process), so a paper that
            # arrives meanwhile gets its vector at once, not after the build.
            building = topics is not None and topics.is_alive()
            if plan.backlog == 0 and topics_due and not building:
                topics_due = False
                service.report("topics", remaining=0, force=True)
                topics = threading.Thread(
                    target=_topics_step, args=(c, say), name="indexer-topics", daemon=True
                )
                topics.start()
                continue
            if plan.backlog == 0 and building:  # the sentences wait for the topics: one long job at a time
                if waiting != "topics":
                    service.report("topics", remaining=0, force=True)
                    waiting = "topics"
                watch.doing = "updating the topics"
                stopping.wait(poll)
                continue
            if plan.backlog == 0 and _sentences_slice(c, say, slice_size, service, watch):
                waiting = ""
                continue
            if plan.backlog == 0 and _measure_deferred(c, say, watch):
                service = c.app.indexes.indexer.current()  # the backend measured fastest, same vectors
                continue
            if plan.backlog == 0:
                if waiting != "idle":
                    say(idle_message(plan.papers, poll))
                    service.report("idle", remaining=0, force=True)  # readers: running, nothing to do
                    waiting = "idle"
                watch.doing = None
                stopping.wait(poll)
                continue
            waiting = ""
            watch.doing = "embedding papers"
            lines = _SliceLines(say, "embedding", plan.backlog, service.reporter)
            summary = service.run(
                lines, limit=slice_size, batch_size=batch_size, stop=stopping.is_set, then=None
            )
            c.app.indexes.evidence.flush()  # the slice's sentence vectors, saved for evidence search
            if summary.embedded or not summary.stopped:
                with_sentences = f" with their sentences ({summary.sentences:,})" if summary.sentences else ""
                say(
                    f"embedded {count(summary.embedded, 'paper')}{with_sentences} in "
                    f"{summary.seconds:,.1f} s ({summary.rate:,.1f} papers/s); "
                    f"{summary.remaining:,} still to embed"
                )
            if summary.embedded == 0:
                watch.doing = None
                stopping.wait(poll)  # someone else took them: do not spin
            else:
                topics_due = True
    except EmbedderUnavailable as exc:
        heartbeat.stop()
        raise fail(str(exc)) from None
    heartbeat.stop()
    stopped = service
    unfinished = topics is not None and topics.is_alive()  # its child ends with this process

    def report() -> None:
        if stopped is not None:
            stopped.report("stopped", force=True)

    def final() -> str:
        return _forced_stop("updating the topics") if unfinished else _what_is_left(c, stopped)

    watch.finish(final, report, c.close)


def _forced_stop(doing: str | None) -> str:
    """The final line of a stop that did not wait for the work in hand (``doing``; None: no work)."""
    if doing in ("embedding papers", "making the papers' sentences"):
        return (
            f"indexer stopped while {doing}: what was committed is kept, the batch in flight is done again "
            "at the next start"
        )
    if doing == "updating the topics":
        return "indexer stopped while updating the topics: the next start updates them"
    return f"indexer stopped while {doing or 'looking for work'}: nothing was in flight"


def _what_is_left(c: Context, service: IndexingService | None) -> str:
    """The final line of a clean stop: what the next start has to do, or that nothing waits."""
    if service is None:
        return "indexer stopped: no papers yet, nothing was pending"
    try:
        backlog = service.plan().backlog
        sentences = c.app.indexes.sentence_indexer.current().plan()
    except (StoreError, OSError):  # the line must come whatever the store says now
        return "indexer stopped; the next start looks for what is left"
    if backlog:
        return f"indexer stopped: {count(backlog, 'paper')} still to embed; the next start resumes there"
    if sentences.backlog:
        return (
            f"indexer stopped: every paper is embedded, the sentences of {count(sentences.backlog, 'paper')} "
            "are still to do; the next start resumes there"
        )
    if sentences.summaries:
        return (
            f"indexer stopped: every paper is embedded, {count(sentences.summaries, 'one-line summary')} "
            f"{agree(sentences.summaries, 'is', 'are')} still to choose; the next start resumes there"
        )
    return "indexer stopped: every paper is embedded, nothing was pending"


def idle_message(papers: int, poll: float) -> str:
    """What the follower says once every paper is embedded."""
    if not papers:
        return f"no papers yet; checking for new ones every {poll:g} s"
    subject = f"{every(papers, 'paper')} {agree(papers, 'is', 'are')}"
    return f"{subject} embedded; checking for new ones every {poll:g} s"


class _SliceLines:
    """The follower's :class:`~paperfeed.domain.ports.ProgressReporter` for one slice: a line every 30 s
    inside it (papers done, the recent rate, the time left of the whole backlog) and, for the sentences,
    the report readers see (the papers' vectors report themselves, services/indexing.py)."""

    def __init__(
        self,
        say: Callable[[str], None],
        phase: IndexerState,
        backlog: int,
        reporter: IndexerReporter | None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.say, self.phase, self.backlog, self.reporter, self._clock = say, phase, backlog, reporter, clock
        self.last = clock()

    def update(self, position: int, total: int | None, added: int, updated: int, rejected: int) -> None:
        if self.reporter is not None and self.phase == "sentences":
            left = max(0, self.backlog - position)
            self.reporter.report("sentences", done=position, remaining=0, sentences_left=left)
        now = self._clock()
        if not position or now - self.last < LINE_EVERY:
            return
        self.last = now
        rate = self.reporter.rate(self.phase) if self.reporter is not None else None
        what = "embedding" if self.phase == "embedding" else "sentences"
        line = f"{what}: {position:,} of {count(total or 0, 'paper')} in this slice"
        if rate:
            left = max(0, self.backlog - position)
            line += f", {rate:,.2f} papers/s, about {describe_duration(left / rate)} left for all {left:,}"
        self.say(line)


def _sentences_slice(
    c: Context,
    say: Callable[[str], None],
    slice_size: int,
    papers: IndexingService,
    watch: StopWatch | None = None,
) -> bool:
    """One slice of the sentences' backlog (papers embedded without their sentences); True when it did
    some. It stops between two batches once a paper waits for its vector (``papers``' backlog), so a new
    paper waits one batch of sentences, seconds, not the slice, and once ``watch`` has a stop asked for. It
    reports itself as the sentence phase
    (``papers``' reporter: what the search notes and /admin/jobs say)."""
    sentences = c.app.indexes.sentence_indexer.current()
    plan = sentences.plan()
    if not plan.pending:
        return False
    reporter = papers.reporter
    if reporter is not None:
        reporter.report("sentences", remaining=0, sentences_left=plan.backlog, force=True)
    model_id = papers.embedder.model_id
    if watch is not None:
        watch.doing = "making the papers' sentences"
    asked = watch.requested.is_set if watch is not None else lambda: False
    summary = sentences.run(
        _SliceLines(say, "sentences", plan.backlog, reporter),
        limit=max(1, slice_size // 4),  # ~5 sentences a paper (5.3 measured): slices of similar time
        stop=lambda: asked() or papers.store.count_backlog(model_id) > 0,
    )
    c.app.indexes.evidence.flush()  # evidence search's sentence vectors: saved once a slice
    if summary.trained:
        say(f"sentences: trained the sentence-role model for {summary.model_id}")
    if summary.summaries:
        say(
            f"sentences: chose the one-line summary of {count(summary.summaries, 'paper')} from stored "
            "sentences"
        )
    say(
        f"sentences: {count(summary.papers, 'paper')} ({count(summary.sentences, 'sentence')}) in "
        f"{summary.seconds:,.1f} s ({summary.rate:,.1f} papers/s); {summary.remaining:,} still to do"
        + ("; new papers first" if summary.stopped and not asked() else "")
    )
    return summary.papers + summary.summaries > 0


def _topics_step(c: Context, say: Callable[[str], None]) -> None:
    """:func:`_topics` on the follower's topics thread: whatever it raises is said in one line (the next
    round, or the next start, tries again), never a thread's traceback."""
    try:
        _topics(c, say)
    except Exception as exc:
        say(f"topics: not updated ({type(exc).__name__}: {exc}); the next round tries again")


def _topics(c: Context, say: Callable[[str], None]) -> None:
    """The topics step once the backlog is embedded: build the topics the first time (or once the papers
    have outgrown the build), else place the new papers, so /topics and /map follow an import within
    minutes instead of the next morning's job. Recorded as a ``topics`` job run (/admin/jobs)."""
    from paperfeed.services.jobs import LeaseBusy, Step

    def step() -> dict[str, int | float | str]:
        return c.app.catalogue.topics_daily(lambda message: say(f"topics: {message}"))

    started = time.monotonic()
    try:
        run = c.app.maintenance.jobs.run_steps("topics", lambda: [Step("topics", step)], trigger="indexer")
    except LeaseBusy:
        say("topics: another process is updating them; leaving it to that one")
        return
    counts = run.steps[0].counts if run.steps else {}
    if run.status != "ok":
        say(f"topics: not updated ({run.error})")
    elif counts.get("built"):
        topics, papers = int(counts.get("topics", 0)), int(counts.get("papers", 0))
        say(
            f"topics: built {count(topics, 'topic')} of {count(papers, 'paper')} "
            f"in {time.monotonic() - started:,.1f} s; /topics and /map show them"
        )
    elif counts.get("too_few"):  # none at all (an empty first start) is not worth a line
        minimum = c.app.settings.topics_min_papers
        few = int(counts["too_few"])
        say(
            f"topics: {count(few, 'paper')} {agree(few, 'has', 'have')} a vector; topics need at least "
            f"{minimum:,}"
        )
    elif counts.get("placed"):
        say(f"topics: placed {count(int(counts['placed']), 'new paper')} into the topics")


def register(app: typer.Typer) -> None:
    @app.command("index")
    def index(
        ctx: typer.Context,
        rebuild: Annotated[
            bool, typer.Option("--rebuild", help="Forget all stored vectors and re-embed every paper.")
        ] = False,
        batch_size: Annotated[
            int | None,
            typer.Option("--batch-size", min=1, max=10_000, help="Papers per committed batch."),
        ] = None,
        limit: Annotated[
            int | None, typer.Option("--limit", min=0, help="Embed at most this many papers this run.")
        ] = None,
        calibrate: Annotated[
            bool,
            typer.Option(
                "--calibrate",
                help="Time torch, onnx and onnx-int8 on this machine first, record the fastest whose "
                f"vectors are torch's (cosine >= {AGREEMENT_FLOOR} on every probe text) for "
                "PAPERFEED_EMBEDDING_BACKEND=auto.",
            ),
        ] = False,
        keyword: Annotated[
            bool,
            typer.Option("--keyword", help="Only rebuild the keyword index from the store (no embedding)."),
        ] = False,
        follow: Annotated[
            bool,
            typer.Option(
                "--follow",
                help="Keep running: embed the backlog in slices of --limit papers (default 2000), then wait "
                "for new papers (what paperfeed run supervises).",
            ),
        ] = False,
        poll: Annotated[
            float, typer.Option("--poll", min=0.1, help="With --follow: seconds between looks for new work.")
        ] = 30.0,
        nice: Annotated[
            int, typer.Option("--nice", min=0, max=19, help="With --follow: lower this process's priority.")
        ] = 0,
        sentences: Annotated[
            bool,
            typer.Option(
                "--sentences/--no-sentences",
                help="With the papers, split their abstracts into sentences, pool each one's vector from the "
                "paper's own forward pass and give it its role (for similar papers by facet and the one-line "
                "summaries); --no-sentences: the papers' vectors only.",
            ),
        ] = True,
        workers: Annotated[
            int,
            typer.Option(
                "--workers",
                min=1,
                max=MAX_WORKERS,
                help="Embed in this many processes, each with its own model and cores // N threads "
                "(PAPERFEED_EMBEDDING_THREADS, when set, is the budget they share); 1: in this process.",
            ),
        ] = 1,
        vector_index: Annotated[
            bool,
            typer.Option(
                "--vector-index/--no-vector-index",
                help="After embedding, bring the vector index up to date; --no-vector-index only stores the "
                "vectors (an embedding worker whose web nodes keep their own index, PAPERFEED_VECTOR_INDEX="
                "local, and follow the database).",
            ),
        ] = True,
    ) -> None:
        """Embed papers whose vector is missing or stale. Safe to interrupt: a re-run resumes."""
        c: Context = ctx.obj
        if workers > 1 and (follow or keyword):
            raise fail("--workers applies to embedding a backlog once: not with --follow or --keyword")
        if not vector_index and (follow or keyword):
            raise fail(
                "--no-vector-index applies to embedding a backlog once: not with --follow or --keyword"
            )
        if follow:
            if rebuild or keyword:
                raise fail("--follow embeds the backlog: it cannot be combined with --rebuild or --keyword")
            _follow(c, slice_size=limit or FOLLOW_SLICE, poll=poll, batch_size=batch_size, nice=nice)
            return
        if keyword:
            words = c.app.indexes.keyword_maintenance
            size = words.rebuild()
            c.console.print(
                f"keyword index rebuilt: {count(size, 'paper')} ({words.engine})", highlight=False
            )
            papers, engine = c.app.indexes.evidence.rebuild_keyword()
            c.console.print(
                f"sentence keyword index rebuilt: the sentences of {count(papers, 'paper')} ({engine})",
                highlight=False,
            )
            return
        try:
            if calibrate:
                _print_calibration(c, c.app.indexes.chooser.calibrate(), "measured now")
                if c.app.settings.embedding_backend != "auto":
                    c.console.print(
                        f"PAPERFEED_EMBEDDING_BACKEND={c.app.settings.embedding_backend} is set and wins "
                        "over the calibration (set it to auto to use it)",
                        highlight=False,
                    )
            service = c.app.indexes.indexer.current()
            choice = c.app.indexes.embedders.choice
            if choice is not None:
                if choice.calibration is not None and not calibrate and choice.reason != "calibration record":
                    _print_calibration(c, choice.calibration, choice.reason)
                config = c.app.indexes.embedder_config(choice.backend)
                c.console.print(
                    f"embedding backend: {choice.backend} ({choice.reason}), "
                    f"{count(config.threads or 0, 'thread')}",
                    highlight=False,
                )
            plan = service.plan(rebuild=rebuild)
            c.console.print(plan.message(), highlight=False)
            _other_workers(c)
            if limit is not None and limit < plan.backlog:
                c.console.print(f"this run embeds at most {limit:,} of them", highlight=False)
            if workers > 1:
                summary = _run_workers(
                    c, workers, rebuild=rebuild, limit=limit, batch_size=batch_size, sync=vector_index
                )
            else:
                with RichProgress(c.err, "embedding", unit="items") as progress:
                    summary = service.run(
                        progress,
                        rebuild=rebuild,
                        limit=limit,
                        batch_size=batch_size,
                        sentences=sentences,
                        sync=vector_index,
                    )
            service.report("stopped", summary, remaining=summary.remaining, force=True)  # this run is over
        except EmbedderUnavailable as exc:
            raise fail(str(exc)) from None
        if summary.embedded:
            with_sentences = f", {summary.sentences:,} with their sentences" if summary.sentences else ""
            c.console.print(
                f"embedded {count(summary.embedded, 'paper')} ({summary.added:,} new, {summary.replaced:,} "
                f"re-embedded{with_sentences}) in {summary.seconds:,.1f} s ({summary.rate:,.1f} papers/s)",
                highlight=False,
            )
        for n, worker in enumerate(summary.workers, 1):
            c.console.print(
                f"  worker {n} (pid {worker.pid}): {count(worker.papers, 'paper')}, "
                f"{worker.rate(summary.seconds):,.2f} papers/s ({worker.busy_rate:,.2f} papers/s while "
                f"embedding; model loaded in {worker.load_seconds:,.1f} s)",
                highlight=False,
            )
        if summary.remaining:
            c.console.print(f"{count(summary.remaining, 'paper')} still to embed: run paperfeed index again")
        if summary.index is not None:
            c.console.print(
                f"vector index: {count(summary.index.size, 'vector')} ({summary.index.mode} update, "
                f"{summary.index.upserted:,} written)",
                highlight=False,
            )
        elif not vector_index:
            c.console.print("vector index: not updated (--no-vector-index): the vectors are in the database")
        else:
            c.console.print("no vector index is configured: vectors are stored in the database only")
        if summary.stopped:
            c.console.print("stopped: every committed batch is kept, the next run continues", highlight=False)
            raise typer.Exit(130)
        if sentences:
            _sentences(c, limit=limit)
            catch_up_evidence(c, lambda text: c.console.print(text, highlight=False))


def catch_up_evidence(c: Context, say: Callable[[str], None]) -> None:
    """Evidence search's sentence indexes brought up to date with the stored sentences (resumable: each
    follows the store by its own cursor) and the sentence vectors saved."""
    done = c.app.indexes.evidence.catch_up()
    if done:
        say(done.message())


def _other_workers(c: Context) -> None:
    """Say which other processes hold batches of this backlog: this one takes the rest, batch by batch."""
    claims = c.app.indexes.claims
    others = [h for h in claims.holdings() if h.holder != claims.holder]
    if not others:
        return
    held = "; ".join(
        f"pid {h.holder.split(':')[1]} on {h.holder.split(':')[0]} holds {h.papers:,} "
        f"({h.first_id} … {h.last_id})"
        for h in others
    )
    c.console.print(
        f"other workers are embedding this backlog ({held}): this one claims the papers nobody holds",
        highlight=False,
        markup=False,
        soft_wrap=True,
    )


def _sentences(c: Context, *, limit: int | None) -> None:
    """The second pass of ``paperfeed index``: the sentences of the abstracts (resumable, with progress)."""
    try:
        service = c.app.indexes.sentence_indexer.current()
        plan = service.plan()
        c.console.print(plan.message(), highlight=False)
        if not plan.pending:
            return
        with RichProgress(c.err, "sentences", unit="papers") as progress:
            summary = service.run(progress, limit=limit)
    except EmbedderUnavailable as exc:
        raise fail(str(exc)) from None
    if summary.trained:
        c.console.print(f"trained the sentence-role model for {summary.model_id}", highlight=False)
    if summary.summaries:
        c.console.print(
            f"chose the one-line summary of {count(summary.summaries, 'paper')} from their stored sentences",
            highlight=False,
        )
    c.console.print(
        f"sentences: {count(summary.papers, 'paper')} ({count(summary.sentences, 'sentence')}) in "
        f"{summary.seconds:,.1f} s "
        f"({summary.rate:,.1f} papers/s)",
        highlight=False,
    )
    if summary.remaining:
        c.console.print(
            f"the sentences of {count(summary.remaining, 'paper')} still to do: run paperfeed index again"
        )


class _Lines:
    """The bar, plus a line every ``every`` seconds (papers done, papers/s) when the bar is not drawn
    (output to a log or a pipe)."""

    def __init__(self, bar: RichProgress, say: Callable[[str], None] | None, every: float = 30.0) -> None:
        self.bar, self.say, self.every = bar, say, every
        self.started = self.last = time.monotonic()

    def update(self, position: int, total: int | None, added: int, updated: int, rejected: int) -> None:
        self.bar.update(position, total, added, updated, rejected)
        now = time.monotonic()
        if self.say is not None and position and (now - self.last >= self.every or position == total):
            self.last = now
            rate = position / (now - self.started) if now > self.started else 0.0
            self.say(f"embedded {position:,} of {count(total or 0, 'paper')}, {rate:,.2f} papers/s")


def _run_workers(
    c: Context, workers: int, *, rebuild: bool, limit: int | None, batch_size: int | None, sync: bool
) -> IndexingSummary:
    """Embed the backlog in ``workers`` processes; the first Ctrl-C (or SIGTERM) stops it cleanly: the
    batches done are committed, those in flight dropped, the vector index synced. A second one aborts."""
    pool = c.app.indexes.embed_workers(workers)
    c.console.print(
        f"embedding in {workers} worker processes ({pool.backend}), {count(pool.threads, 'thread')} each",
        highlight=False,
    )
    stop = threading.Event()

    def on_signal(_signum: int, _frame: FrameType | None) -> None:
        signal.signal(signal.SIGINT, signal.default_int_handler)  # a second Ctrl-C aborts at once
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        stop.set()
        c.err.print("stopping: committing the batches that are done (Ctrl-C again to abort)", highlight=False)

    previous = signal.signal(signal.SIGINT, on_signal), signal.signal(signal.SIGTERM, on_signal)

    def say(text: str) -> None:
        c.console.print(text, highlight=False, markup=False, soft_wrap=True)

    try:
        with RichProgress(c.err, "embedding", unit="items") as bar:
            return c.app.indexes.indexer.current().run(
                _Lines(bar, None if c.err.is_terminal else say),
                rebuild=rebuild,
                limit=limit,
                batch_size=batch_size,
                workers=pool,
                stop=stop.is_set,
                sync=sync,
            )
    finally:
        pool.close()
        signal.signal(signal.SIGINT, previous[0])
        signal.signal(signal.SIGTERM, previous[1])


def _measure_deferred(c: Context, say: Callable[[str], None], watch: StopWatch) -> bool:
    """The backends' timings the follower put off until its backlog was done (a machine's first start),
    measured now; one line says what won. True when it measured."""
    embedders = c.app.indexes.embedders
    if not embedders.owes_measurement():
        return False
    watch.doing = "measuring the embedding backends on this machine"
    measured = embedders.measure_deferred()
    if measured is None or measured.calibration is None:
        return False
    timings = ", ".join(
        f"{t.backend} {t.per_cpu_second:,.1f}"
        for t in measured.calibration.timings
        if t.agrees(measured.calibration.floor)
    )
    say(
        f"embedding backend: {measured.backend}, measured now that the backlog is done "
        f"(texts per CPU-second: {timings}); recorded for later runs"
    )
    return True


def _print_calibration(c: Context, calibration: Calibration, how: str) -> None:
    c.console.print(
        f"embedding backends on {calibration.cpu}, {count(calibration.threads, 'thread')}, "
        f"{calibration.timings[0].texts if calibration.timings else 0} {calibration.probe_source} ({how}):",
        highlight=False,
        markup=False,
    )
    for line in calibration.table():
        c.console.print("  " + line, highlight=False, markup=False)
    c.console.print(
        f"chosen: {calibration.backend} (vectors: {calibration.model_id}); recorded for later runs",
        highlight=False,
    )
    chosen = next((t for t in calibration.timings if t.backend == calibration.backend), None)
    if chosen is not None and not chosen.agrees(calibration.floor):  # kept for the vectors already stored
        c.console.print(
            f"{calibration.backend} is kept because the stored vectors are its own, but they are not "
            f"{calibration.reference}'s and rank worse: `paperfeed index --calibrate` moves to the fastest "
            "backend that agrees (and re-embeds every paper)",
            highlight=False,
        )
