"""``paperfeed check [--repair]``: verify (and repair) the keyword and vector indexes against the store."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import orjson
import typer

from paperfeed.domain.wording import count

from .context import Context, fail

if TYPE_CHECKING:
    from paperfeed.domain.consistency import Probe
    from paperfeed.services.check import CheckReport


def _lines(probes: list[Probe]) -> list[str]:
    out = []
    for probe in probes:
        kind = f" ({probe.kind})" if probe.kind else ""
        status = "ok" if probe.ok else "PROBLEM"
        out.append(f"{probe.area:<13}{status:<8} {probe.summary}{kind}")
        for finding in probe.findings:
            examples = f" (e.g. {', '.join(finding.examples)})" if finding.examples else ""
            out.append(f"{'':<13}- {finding.said()}{examples}")
        for note in probe.notes:
            out.append(f"{'':<13}  note: {note}")
    return out


def _as_json(report: CheckReport) -> dict[str, object]:
    def probes(items: list[Probe]) -> list[dict[str, object]]:
        return [
            {
                "area": p.area,
                "kind": p.kind,
                "ok": p.ok,
                "summary": p.summary,
                "notes": p.notes,
                "findings": [
                    {"problem": f.problem, "count": f.count, "said": f.said(), "examples": list(f.examples)}
                    for f in p.findings
                ],
            }
            for p in items
        ]

    return {
        "ok": report.ok,
        "seconds": round(report.seconds, 3),
        "probes": probes(report.probes),
        "actions": report.actions,
        "after": None if report.after is None else probes(report.after),
        "repaired": report.repaired,
    }


def register(app: typer.Typer) -> None:
    @app.command("check")
    def check(
        ctx: typer.Context,
        repair: Annotated[
            bool,
            typer.Option(
                "--repair", help="Fix what is found: re-index missing or stale papers, drop extra entries."
            ),
        ] = False,
        as_json: Annotated[
            bool, typer.Option("--json", help="Print the report as one JSON object (one line).")
        ] = False,
    ) -> None:
        """Verify that the keyword and vector indexes hold every paper of the store exactly once, current.

        Exit 0 when everything is consistent, 1 when problems were found (with --repair: also when they
        were all repaired; the report says whether a re-check is clean).
        """
        from paperfeed.domain.errors import EmbedderUnavailable

        c: Context = ctx.obj
        service = c.app.maintenance.check
        try:
            report = service.check()
            if repair and not report.ok:
                report = service.repair(report)
        except EmbedderUnavailable as exc:
            raise fail(str(exc)) from None
        if as_json:
            typer.echo(orjson.dumps(_as_json(report)).decode())
        else:
            where = c.app.maintenance.store.location()
            c.console.print(f"paperfeed check: {where}", highlight=False)
            for line in _lines(report.probes):
                c.console.print(line, highlight=False, markup=False, soft_wrap=True)
            if report.ok:
                c.console.print(f"consistent ({report.seconds:,.1f} s)", highlight=False)
            elif report.after is None:
                c.console.print(
                    f"{count(report.problems, 'problem')} found ({report.seconds:,.1f} s); "
                    "`paperfeed check --repair` fixes them",
                    highlight=False,
                )
            else:
                for action in report.actions:
                    c.console.print(f"repair: {action}", highlight=False, markup=False)
                if report.repaired:
                    c.console.print(
                        f"{count(report.problems, 'problem')} found and repaired; the re-check is clean "
                        f"({report.seconds:,.1f} s)",
                        highlight=False,
                    )
                else:
                    c.console.print("still wrong after the repair:", highlight=False)
                    bad = [p for p in report.after if not p.ok]
                    for line in _lines(bad):
                        c.console.print(line, highlight=False, markup=False, soft_wrap=True)
        if not report.ok:
            raise typer.Exit(1)
