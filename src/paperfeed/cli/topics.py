"""``paperfeed topics build|place|list``: topics of the papers (issue #17, docs/topics.md)."""

from __future__ import annotations

from typing import Annotated

import typer

from .context import Context, fail

__all__ = ["topics_app"]

topics_app = typer.Typer(
    help="Topics of the papers: build them (a full rebuild that keeps surviving ids), place new papers "
    "into them (daily), list them.",
    no_args_is_help=True,
)


@topics_app.command("build")
def build(ctx: typer.Context) -> None:
    """Cluster every embedded paper into topics; the previous topics stay served until it finishes."""
    from paperfeed.domain.topics import TooFewPapers

    c: Context = ctx.obj
    try:
        summary = c.app.topics.build(lambda m: c.err.print(m, highlight=False))
    except TooFewPapers as exc:
        raise fail(str(exc)) from None
    b = summary.build
    c.console.print(
        f"built {b.topics} topics of {b.papers:,} papers in {summary.seconds:.1f} s "
        f"({b.method}; {b.model_id}): "
        f"{summary.kept} kept their id, {summary.new} new, {summary.removed} removed",
        highlight=False,
    )
    if b.noise:
        c.console.print(f"{b.noise:,} papers the clustering left as noise went to their nearest topic")
    if summary.without_vector:
        c.console.print(
            f"{summary.without_vector:,} papers have no embedding yet and were skipped "
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
        summary = c.app.topics.place(limit=limit)
    except LookupError as exc:
        raise fail(str(exc)) from None
    c.console.print(
        f"placed {summary.placed:,} papers in {summary.seconds:.2f} s; {summary.remaining:,} still unplaced",
        highlight=False,
    )


@topics_app.command("list")
def list_topics(
    ctx: typer.Context,
    limit: Annotated[int, typer.Option(min=1, help="Show at most this many topics.")] = 50,
) -> None:
    """The current topics, biggest first, and what is rising this week."""
    c: Context = ctx.obj
    overview = c.app.topics.overview()
    if overview.build is None:
        raise fail("no topics yet: run `paperfeed topics build`", 1)
    b = overview.build
    c.console.print(
        f"{b.topics} topics of {b.papers:,} papers, built {b.built_at:%Y-%m-%d %H:%M} UTC", highlight=False
    )
    for t in overview.topics[:limit]:
        c.console.print(f"{t.id:>5}  {t.size:>7,}  {t.label}", highlight=False)
    for r in overview.rising[:5]:
        c.console.print(
            f"rising: topic {r.topic_id} ({r.papers} papers this week, {r.share:.1%} vs {r.before:.1%})"
        )
