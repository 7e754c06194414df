"""``paperfeed topics build|place|list``: topics of the papers (issue #17, docs/topics.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from paperfeed.domain.wording import agree, count

from .context import Context, fail

if TYPE_CHECKING:
    from paperfeed.domain.topics import Topic

__all__ = ["topics_app"]

topics_app = typer.Typer(
    help="Topics of the papers: build them (a full rebuild that keeps surviving ids), place new papers "
    "into them (daily), list them.",
    no_args_is_help=True,
)


BUILD_JOB = "topics-build"  # the job_runs name of a build run by hand (/admin/jobs lists it)


@topics_app.command("build")
def build(ctx: typer.Context) -> None:
    """Cluster every embedded paper into topics; the previous topics stay served until it finishes.

    The build is recorded as a run of the job ``topics-build`` (``paperfeed jobs status``, /admin/jobs),
    under that job's lease, so two builds by hand never overlap and a running server shows the new topics
    as soon as it ends."""
    from paperfeed.domain.job_runs import StepRefused
    from paperfeed.domain.topics import TooFewPapers
    from paperfeed.services.jobs import LeaseBusy, Step
    from paperfeed.services.topics import BuildSummary

    c: Context = ctx.obj
    built: list[BuildSummary] = []

    def step() -> dict[str, int | float | str]:
        try:
            summary = c.app.catalogue.topics.build(lambda m: c.err.print(m, highlight=False))
        except TooFewPapers as exc:
            raise StepRefused(str(exc)) from exc
        built.append(summary)
        b = summary.build
        return {"topics": b.topics, "papers": b.papers, "kept": summary.kept, "new": summary.new}

    try:
        run = c.app.maintenance.jobs.run_steps(BUILD_JOB, lambda: [Step("build", step)])
    except LeaseBusy as exc:
        raise fail(f"a topics build is already running: {exc}") from None
    if not built:
        error = next((r.error for r in run.steps if r.error), run.error)
        raise fail(error or "the topics build failed (see `paperfeed jobs status`)")
    summary = built[0]
    b = summary.build
    c.console.print(
        f"built {count(b.topics, 'topic')} of {count(b.papers, 'paper')} in {summary.seconds:.1f} s "
        f"({b.method}; {b.model_id}): "
        f"{summary.kept} kept their id, {summary.new} new, {summary.removed} removed",
        highlight=False,
    )
    c.console.print(
        f"{count(b.coarse, 'coarse topic')} {agree(b.coarse, 'groups', 'group')} them "
        "(`paperfeed topics list`)",
        highlight=False,
    )
    if b.noise:
        c.console.print(f"{count(b.noise, 'paper')} the clustering left as noise went to their nearest topic")
    if summary.without_vector:
        c.console.print(
            f"{count(summary.without_vector, 'paper')} {agree(summary.without_vector, 'has', 'have')} no "
            f"embedding yet and {agree(summary.without_vector, 'was', 'were')} skipped "
            "(run `paperfeed index`)",
            highlight=False,
        )


@topics_app.command("place")
def place(
    ctx: typer.Context,
    limit: Annotated[int, typer.Option(min=1, help="Place at most this many papers.")] = 100_000,
) -> None:
    """Put papers embedded since the last build into the topic with the nearest centroid."""
    c: Context = ctx.obj
    try:
        summary = c.app.catalogue.topics.place(limit=limit)
    except LookupError as exc:
        raise fail(str(exc)) from None
    c.console.print(
        f"placed {count(summary.placed, 'paper')} in {summary.seconds:.2f} s; {summary.remaining:,} "
        "still unplaced",
        highlight=False,
    )


@topics_app.command("list")
def list_topics(
    ctx: typer.Context,
    limit: Annotated[int, typer.Option(min=1, help="Show at most this many fine topics.")] = 50,
) -> None:
    """The current topics as a tree (coarse topics, their fine topics, biggest first) and what is rising."""
    c: Context = ctx.obj
    overview = c.app.catalogue.topics.overview(level=None)
    if overview.build is None:
        raise fail("no topics yet: run `paperfeed topics build`", 1)
    b = overview.build
    c.console.print(
        f"{count(b.topics, 'topic')} of {count(b.papers, 'paper')} in {count(b.coarse, 'coarse topic')}, "
        f"built {b.built_at:%Y-%m-%d %H:%M} UTC",
        highlight=False,
    )
    coarse = [t for t in overview.topics if t.level == 1]
    fine = [t for t in overview.topics if t.level == 0]
    children: dict[int | None, list[Topic]] = {}
    for t in fine:
        children.setdefault(t.parent_id, []).append(t)
    shown = 0
    for group in [*coarse, None]:  # fine topics without a parent (a build before levels) come last
        under = children.get(group.id if group is not None else None, [])
        if group is None and not under:
            continue
        if group is not None:
            c.console.print(f"{group.id:>5}  {group.size:>7,}  {group.label}", highlight=False)
        for t in under:
            if shown == limit:
                break
            c.console.print(f"{'':>7}{t.id:>5}  {t.size:>7,}  {t.label}", highlight=False)
            shown += 1
    for r in overview.rising[:5]:
        c.console.print(
            f"rising: topic {r.topic_id} ({count(r.papers, 'paper')} this week, {r.share:.1%} vs "
            f"{r.before:.1%})"
        )
