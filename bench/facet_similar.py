"""Similar papers overall and by facet, on every proxy side by side (issue #43; issue #33 part 4 before).

No judgments of "same method" or "same background" are at hand (held-out expert judgments per facet check
the design and are never tuned on), so the settings are chosen on proxies that reward topical relevance
and the facet together (bench/facet_proxies.py says which proxy speaks for which facet and why): the seed
pages, the Paperscape co-citation protocol, SciFact's co-evidence pairs and claims, and CSAbstruct's
human sentence roles. Each is a real instance (bench/facet_lists.py), its vectors from the bench cache.

Steps:

* ``grid``: the settings, chosen on the *train* queries of every proxy from cached lists (NumPy over the
  first stage's candidates as the service made them, bench/facet_rank.py): first the overall list's
  sentence stage (weight of the sentence max-sim order, of the keyword list, k, depth), among the
  settings that lose beyond noise on no topical proxy the best mean relative gain over today's list;
  then the facets (weight of the match, k, depth, role floor; one setting for the three), among those
  whose every facet list loses beyond noise on no topical proxy, the best smallest gain in CSAbstruct
  role agreement. It ends with the chosen settings as ``PAPERFEED_*`` lines (the defaults to ship).
* ``report``: for the settings as shipped (the ``PAPERFEED_SIMILAR_*`` defaults), every proxy's test
  and train queries through the service (``app.search.facets``, what the page, the API, MCP and the
  CLI call; ``--served``: through ``GET /api/papers/{id}/similar?facet=`` of a real ``paperfeed serve``),
  overall and each facet side by side with 95 % bootstrap intervals, and each facet's paired change
  against the overall list; today's list (the sentence stage off) beside them. Also the milliseconds
  per similar request with the stage on and off on the largest store (Paperscape's, 49,264 papers).

    .venv/bin/python -m bench.facet_similar grid [--proxies seeds,scifact,claims,csabstruct,paperscape]
    .venv/bin/python -m bench.facet_similar report [--served]
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import os
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import orjson

from bench.vector_cache import SHARED

if TYPE_CHECKING:
    from bench.facet_proxies import Proxy

FACETS = ("background", "method", "result")
TOP = 10
PROXIES = ("seeds", "scifact", "claims", "csabstruct", "paperscape")


def judgments() -> tuple[dict[str, set[str]], dict[str, str], dict[str, str]]:
    """SciFact claims → their judged abstract ids (in the corpus), each claim's BEIR split and its text."""
    claims: dict[str, set[str]] = defaultdict(set)
    split: dict[str, str] = {}
    text: dict[str, str] = {}
    with gzip.open(SHARED / "data" / "qrels_scifact.jsonl.gz", "rb") as fh:
        for line in fh:
            row = orjson.loads(line)
            if row.get("doc_in_corpus", True):
                claims[row["query_id"]].add(str(row["doc_id"]))
                split[row["query_id"]] = row["beir_split"]
                text[row["query_id"]] = row["query"]
    return dict(claims), split, text


def proxy_queries(name: str) -> list[str]:
    """The query papers of a proxy (claims: its claims, handled by bench/facet_lists.gather_claims)."""
    from bench.facet_proxies import csabstruct_gold, seed_pages

    if name == "seeds":
        return sorted(seed_pages())
    if name == "scifact":
        from bench.similar_quality import coevidence

        train, test = coevidence()
        return sorted(set(train) | set(test))
    if name == "csabstruct":
        return sorted(k for k, v in csabstruct_gold().items() if v[2] != "train")
    if name == "paperscape":
        from bench.similar_citations import judgments as cocitations
        from bench.similar_citations import read_edges, read_papers

        return sorted(cocitations(read_papers(), read_edges()))
    raise SystemExit(f"unknown proxy {name!r} (choose from {', '.join(PROXIES)})")


def load_proxies(names: Sequence[str]) -> list[Proxy]:
    from bench import facet_proxies as fp
    from bench.facet_lists import gather, gather_claims
    from bench.vector_cache import VectorCache

    cache = VectorCache.default("torch", 1)
    out: list[Proxy] = []
    for name in names:
        started = time.perf_counter()
        if name == "claims":
            proxy = fp.claims_proxy(gather_claims(cache))
        else:
            corpus = gather(name, proxy_queries(name), cache)
            make = {
                "seeds": fp.seeds_proxy,
                "scifact": fp.coevidence_proxy,
                "csabstruct": fp.csabstruct_proxy,
                "paperscape": fp.paperscape_proxy,
            }[name]
            proxy = make(corpus)
        print(
            f"{proxy.name}: {len(proxy.queries['train']):,} train / {len(proxy.queries['test']):,} test "
            f"queries ({time.perf_counter() - started:.0f} s)",
            flush=True,
        )
        out.append(proxy)
    return out


# -- grid: the settings on train, from cached lists ---------------------------------------------------


@dataclass
class Runs:
    """Per query of one split: the overall list's score and each facet list's (role agreement: the
    overall list's agreement on that facet under ``overall-<facet>``)."""

    values: dict[str, list[float]]

    def mean(self, key: str) -> float:
        return float(np.mean(self.values[key])) if self.values.get(key) else float("nan")


def significant_loss(after: Sequence[float], before: Sequence[float], rounds: int = 1000) -> bool:
    """Whether ``after`` is below ``before`` beyond noise: the 95 % paired bootstrap interval of the
    change of the mean lies wholly below 0."""
    a, b = np.asarray(after, dtype=np.float64), np.asarray(before, dtype=np.float64)
    if not len(a) or np.array_equal(a, b):
        return False
    rng = np.random.default_rng(13)
    picks = rng.integers(0, len(a), size=(rounds, len(a)))
    diffs = (a - b)[picks].mean(axis=1)
    return bool(np.percentile(diffs, 97.5) < 0)


FLOORS = (1.0, 0.5)


def grid(names: Sequence[str], overall: str | None = None) -> None:
    """Choose the settings on the train queries (see the module doc for the two rules)."""
    from bench.facet_rank import FacetChoice, Overall, facet_list, matches, overall_list

    proxies = load_proxies(names)
    found = {
        floor: {
            p.name: {q: matches(p.corpus, p.corpus.lists[q], floor) for s in p.queries.values() for q in s}
            for p in proxies
        }
        for floor in FLOORS
    }

    def run(p: Proxy, split: str, o: Overall, f: FacetChoice | None) -> Runs:
        values: dict[str, list[float]] = defaultdict(list)
        floor = f.floor if f is not None else 1.0
        for q in p.queries[split]:
            ql, m = p.corpus.lists[q], found[floor][p.name][q]
            ov = overall_list(ql, m, o)
            if p.topical:
                values["overall"].append(p.score(q, ov, "overall"))
            for x in FACETS:
                fl = facet_list(ql, m, ov, x, f, o) if f is not None else None
                values[x].append(p.score(q, ov if fl is None else fl, x))
                if not p.topical:
                    values[f"overall-{x}"].append(p.score(q, ov, x))
        return Runs(dict(values))

    topical = [p for p in proxies if p.topical]
    today = Overall()
    before = {p.name: run(p, "train", today, None).values["overall"] for p in topical}
    print(
        "\n## the overall list's sentence stage, train queries (change against today's list)\n"
        "rule: no topical proxy loses beyond noise (95 % paired interval wholly below 0: ✗); "
        "the best mean relative gain over the proxies"
    )
    scored = []
    for fk, s, kw, k, d in itertools.product(
        [0.0, 0.25, 0.5, 1.0], [0.0, 0.5, 0.75, 1.0, 1.5], [0.0, 0.25, 0.5, 1.0], [10.0, 20.0, 30.0, 60.0], [30, 50]
    ):
        if fk == 0 and s == 0 and kw == 0:
            continue
        # the service's max-sim (domain.sentences.max_sim) is both ways; fk: the first stage's keyword weight
        o = Overall(s, kw, k, d, "both", first_keyword=fk)
        after = {p.name: run(p, "train", o, None).values["overall"] for p in topical}
        gains = {n: float(np.mean(after[n])) / float(np.mean(before[n])) - 1 for n in after}
        ok = not any(significant_loss(after[n], before[n]) for n in after)
        scored.append((ok, float(np.mean(list(gains.values()))), o, gains))
    scored.sort(key=lambda x: (-x[0], -x[1]))
    for ok, worth, o, gains in scored[:15]:
        cells = "  ".join(f"{n.split()[0]} {g * 100:+.1f}%" for n, g in gains.items())
        print(f"  {'  ' if ok else '✗ '}{o!s:56s} mean {worth * 100:+.1f}%   {cells}")
    chosen = scored[0][2] if scored[0][0] and scored[0][1] > 0 else today
    print(f"chosen: {chosen}")
    if overall is not None:  # the facets over another overall list (weight, keyword, k, depth, direction)
        given = overall.split(",")
        chosen = Overall(float(given[0]), float(given[1]), float(given[2]), int(given[3]), given[4])
        print(f"the facets are measured over: {chosen}")

    print(
        "\n## the facets over the chosen overall list, train queries (change against the overall list)\n"
        "rule: for every facet, no topical proxy loses beyond noise (✗); the best smallest gain in "
        "CSAbstruct role agreement over the three facets (one setting for all)"
    )
    facet_grid = [
        FacetChoice(w, 0.0, k, d, floor)
        for w, k, d, floor in itertools.product(
            [0.1, 0.2, 0.3, 0.5, 1.0], [10.0, 20.0, 60.0], [15, 20, 30, 50], FLOORS
        )
    ]
    agreement = [p for p in proxies if not p.topical]
    rows = []
    for f in facet_grid:
        runs = {p.name: run(p, "train", chosen, f) for p in proxies}
        ok = True
        columns: list[str] = []
        for p in proxies:
            r = runs[p.name]
            changes = []
            for x in FACETS:
                ref = r.values["overall"] if p.topical else r.values[f"overall-{x}"]
                changes.append(float(np.mean(r.values[x])) / max(float(np.mean(ref)), 1e-12) - 1)
                if p.topical and significant_loss(r.values[x], ref):
                    ok = False
            columns.append(f"{p.name.split()[0][:10]} " + "/".join(f"{c * 100:+.1f}" for c in changes))
        worth = min(
            (
                float(np.mean(runs[p.name].values[x])) / float(np.mean(runs[p.name].values[f"overall-{x}"]))
                - 1
                for p in agreement
                for x in FACETS
            ),
            default=0.0,
        )
        rows.append((ok, worth, f, columns))
    rows.sort(key=lambda x: (-x[0], -x[1]))
    print("  (each proxy: background/method/result, % against the overall list)")
    for ok, worth, f, shown in rows[:20]:
        mark = "  " if ok else "✗ "
        print(f"  {mark}{f!s:40s} smallest agreement gain {worth * 100:+.1f}%   {'  '.join(shown)}")
    print(f"chosen: {rows[0][2] if rows[0][0] else 'none admissible'}")
    print("\nthe chosen settings (the defaults to ship):")
    print(
        f"PAPERFEED_SIMILAR_KEYWORD_WEIGHT={chosen.first_keyword:g}\n"
        f"PAPERFEED_SIMILAR_SENTENCE_WEIGHT={chosen.sentences:g}\n"
        f"PAPERFEED_SIMILAR_SENTENCE_KEYWORD_WEIGHT={chosen.keyword:g}\n"
        f"PAPERFEED_SIMILAR_SENTENCE_RRF_K={chosen.k:g}\n"
        f"PAPERFEED_SIMILAR_SENTENCE_DEPTH={chosen.depth}"
    )
    if rows[0][0]:
        f = rows[0][2]
        print(
            f"PAPERFEED_SIMILAR_FACET_WEIGHT={f.match:g}\nPAPERFEED_SIMILAR_FACET_RRF_K={f.k:g}\n"
            f"PAPERFEED_SIMILAR_FACET_CANDIDATES={f.depth}\nPAPERFEED_SIMILAR_FACET_ROLE_FLOOR={f.floor:g}"
        )


# -- report: the shipped settings through the service -------------------------------------------------

KINDS = ("today", "overall", *FACETS)  # today: the sentence stage off (the list before issue #43)


def in_process_lists(data_dir: Path, queries: Sequence[str]) -> dict[str, dict[str, list[str]]]:
    """kind -> query -> the 10 ids through ``app.search.facets`` (what every surface calls)."""
    from bench.facet_lists import settings_for
    from paperfeed.bootstrap import build_app

    out: dict[str, dict[str, list[str]]] = {k: {} for k in KINDS}
    off = {"similar_sentence_weight": 0.0, "similar_sentence_keyword_weight": 0.0}  # the stage off
    for kind, overrides in (("today", off), ("shipped", {})):
        app = build_app(settings_for(data_dir, **overrides))
        try:
            for q in queries:
                paper = app.catalogue.visible.paper(q)
                if paper is None:
                    continue
                for facet in ("overall",) if kind == "today" else ("overall", *FACETS):
                    page = app.search.facets.of(paper, facet, TOP)  # type: ignore[arg-type]
                    out["today" if kind == "today" else facet][q] = [h.paper.id for h in page.hits]
        finally:
            app.close()
    return out


def served_lists(
    data_dir: Path, queries: Sequence[str], as_user: bool = False
) -> dict[str, dict[str, list[str]]]:
    """The same through ``GET /api/papers/{id}/similar?facet=`` of a real ``paperfeed serve`` (its
    settings the defaults; "today" from a second server with the sentence stage off)."""
    import secrets
    import subprocess
    import sys

    import httpx

    from bench.served_quality import free_port, product_env, reader_token, wait_until_up

    out: dict[str, dict[str, list[str]]] = {k: {} for k in KINDS}
    off = {"PAPERFEED_SIMILAR_SENTENCE_WEIGHT": "0", "PAPERFEED_SIMILAR_SENTENCE_KEYWORD_WEIGHT": "0"}
    for kind, extra in (("today", off), ("shipped", {})):
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        env = {**product_env(data_dir), "PAPERFEED_SECRET_KEY": secrets.token_hex(32), **extra}
        if not as_user:  # a bench instance: the engine it was built with, the cache's vector space
            env["PAPERFEED_KEYWORD_ENGINE"] = "tantivy"
            env["PAPERFEED_EMBEDDING_BACKEND"] = "torch"
        token = reader_token(data_dir, env["PAPERFEED_SECRET_KEY"])
        command = ["serve", "--host", "127.0.0.1", "--port", str(port), "--base-url", base]
        server = subprocess.Popen(
            [sys.executable, "-m", "paperfeed", *command, "--log-level", "warning"], env=env
        )
        try:
            wait_until_up(base, server)
            headers = {"Authorization": f"Bearer {token}"}
            with httpx.Client(base_url=base, timeout=120, headers=headers) as client:
                for q in queries:
                    for facet in ("overall",) if kind == "today" else ("overall", *FACETS):
                        params = {"limit": TOP} | ({} if facet == "overall" else {"facet": facet})
                        answer = client.get(f"/api/papers/{q}/similar", params=params)
                        answer.raise_for_status()
                        ids = [item["paper"]["id"] for item in answer.json()]
                        out["today" if kind == "today" else facet][q] = ids
        finally:
            server.terminate()
            server.wait(timeout=30)
    return out


def cell(values: Sequence[float]) -> str:
    from bench.facet_proxies import interval

    low, high = interval(values)
    return f"{float(np.mean(values)):.4f} [{low:.3f}, {high:.3f}]"


def change(after: Sequence[float], before: Sequence[float]) -> str:
    from bench.facet_proxies import paired

    d, low, high = paired(after, before)
    return f"{d:+.4f} [{low:+.3f}, {high:+.3f}]"


def report_proxy(p: Proxy, lists: dict[str, dict[str, list[str]]]) -> None:
    """One proxy's table: today, overall, each facet (mean [95 % interval]) and each facet's paired
    change against the overall list, per split."""
    print(f"\n### {p.name} ({len(p.queries['test']):,} test / {len(p.queries['train']):,} train queries)")
    print(f"{'':8s}" + "".join(f"{k:>26s}" for k in KINDS))
    for split in ("test", "train"):
        queries = [q for q in p.queries[split] if q in lists["overall"]]
        values: dict[str, list[float]] = {}
        for kind in KINDS:
            facet = kind if kind in FACETS else "overall"
            if p.topical:
                values[kind] = [p.score(q, lists[kind][q], facet) for q in queries]
            elif kind in FACETS:  # role agreement: the facet's list against the overall list's, on it
                values[kind] = [p.score(q, lists[kind][q], kind) for q in queries]
                values[f"overall-{kind}"] = [p.score(q, lists["overall"][q], kind) for q in queries]
        row = "".join(f"{cell(values[k]) if k in values else 'n/a':>26s}" for k in KINDS)
        print(f"{split:8s}{row}")
        diffs = ["", change(values["overall"], values["today"]) if "today" in values else ""]
        for facet in FACETS:
            ref = values["overall"] if p.topical else values[f"overall-{facet}"]
            diffs.append(change(values[facet], ref))
        print(f"{'  change':8s}" + "".join(f"{d:>26s}" for d in diffs))
        if not p.topical:
            base = "".join(f"{cell(values[f'overall-{x}']):>26s}" for x in FACETS)
            print(f"{'  overall list on that facet':60s}{base[8:]}")


def user_instance(name: str) -> Path:
    """The seed pages as a user gets them: ``paperfeed import --id-namespace seed`` and ``paperfeed
    index`` (every setting its default, the backend ``auto``'s choice), made once and kept."""
    from bench.facet_lists import FOLDER
    from bench.served_quality import paperfeed, product_env

    if name != "seeds":
        raise SystemExit("a user's instance is made for the seed pages only")
    data_dir = FOLDER / "seeds-as-a-user"
    done = data_dir / "indexed"
    if not done.exists():
        data_dir.mkdir(parents=True, exist_ok=True)
        env = product_env(data_dir)
        seeds = SHARED / "seeds" / "seed_papers.jsonl"
        print(f"import: {paperfeed('import', '--id-namespace', 'seed', str(seeds), env=env):.0f} s")
        print(f"index: {paperfeed('index', env=env):.0f} s")
        done.write_text("ok\n")
    return data_dir


def cost(data_dir: Path, queries: Sequence[str], rounds: int = 3) -> None:
    """Milliseconds (wall and CPU) per similar request in process, the sentence stage off and on, and a
    facet list, on one instance, over the same queries (warmed once; the best of ``rounds``)."""
    from bench.facet_lists import settings_for
    from paperfeed.bootstrap import build_app

    variants: tuple[tuple[str, dict[str, float], str], ...] = (
        (
            "overall, the sentence stage off (before)",
            {"similar_sentence_weight": 0.0, "similar_sentence_keyword_weight": 0.0},
            "overall",
        ),
        ("overall, as shipped", {}, "overall"),
        ("by method, as shipped", {}, "method"),
    )
    timed: dict[str, tuple[float, float]] = {}
    for label, overrides, facet in variants:
        app = build_app(settings_for(data_dir, **overrides))
        try:
            papers = [p for p in (app.catalogue.visible.paper(q) for q in queries) if p is not None]
            for paper in papers[:20]:  # warm: the model, the indexes, the page cache of the store
                app.search.facets.of(paper, facet, TOP)  # type: ignore[arg-type]
            best = (float("inf"), float("inf"))
            for _ in range(rounds):
                wall, cpu = time.perf_counter(), time.process_time()
                for paper in papers:
                    app.search.facets.of(paper, facet, TOP)  # type: ignore[arg-type]
                n = max(len(papers), 1)
                found = ((time.perf_counter() - wall) * 1000 / n, (time.process_time() - cpu) * 1000 / n)
                best = min(best, found)
            timed[label] = best
        finally:
            app.close()
    before = timed[variants[0][0]]
    print(f"\nms per similar request in process ({len(queries):,} papers, best of {rounds}):")
    for label, (wall, cpu) in timed.items():
        extra = (
            f"  (+{wall - before[0]:.1f} ms wall, ×{cpu / before[1]:.2f} CPU)"
            if label != variants[0][0]
            else ""
        )
        print(f"  {label:42s} {wall:6.1f} ms wall {cpu:6.1f} ms CPU{extra}")


def report(names: Sequence[str], served: bool) -> None:
    from bench.facet_lists import build_instance
    from bench.vector_cache import VectorCache

    cache = VectorCache.default("torch", 1)
    proxies = load_proxies([n for n in names if n != "claims"])
    for p in proxies:
        name = p.corpus.name
        # served, the seed pages are imported and indexed as a user would (paperfeed import + index);
        # the other proxies' instances hold the bench's cached vectors, made by the same code
        data_dir = user_instance(name) if served and name == "seeds" else build_instance(name, cache)
        queries = p.queries["test"] + p.queries["train"]
        started = time.perf_counter()
        if served:
            lists = served_lists(data_dir, queries, as_user=name == "seeds")
        else:
            lists = in_process_lists(data_dir, queries)
        how = "GET /api/papers/{id}/similar of paperfeed serve" if served else "app.search.facets in process"
        took = time.perf_counter() - started
        print(f"\n{name}: {len(queries):,} queries × 5 lists through {how} in {took:.0f} s")
        report_proxy(p, lists)
        if name == "paperscape":  # the largest store: what the stage costs per request
            cost(data_dir, p.queries["test"][:300])


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("step", choices=["grid", "report"])
    parser.add_argument("--proxies", default=",".join(PROXIES))
    parser.add_argument("--served", action="store_true")
    parser.add_argument("--overall", default=None, help="grid: the facets over this overall setting")
    args = parser.parse_args(argv)
    from bench.sentence_roles import cpu_flags

    print(f"CPU: {os.cpu_count()} cores, {cpu_flags()}; load {os.getloadavg()[0]:.2f} (1-min)")
    names = [n.strip() for n in args.proxies.split(",") if n.strip()]
    if args.step == "grid":
        grid(names, args.overall)
    else:
        report(names, args.served)


if __name__ == "__main__":
    main()
