"""The meaning floor of evidence search (``PAPERFEED_EVIDENCE_MIN_COSINE``), chosen on SciFact *train*.

Without a floor a nonsense question is answered with the nearest sentences, however far. With it, when no
candidate sentence's cosine with the query reaches the floor, nothing bears on the question and no
sentence is shown (a per-sentence cut was measured first and lost: it emptied fewer nonsense questions
at a larger cost to real ones; docs/benchmarks.md). Three sides:

* **cost**: SciFact's 505 train claims (real questions whose rationales are known), ranked by the service's
  own :meth:`~paperfeed.services.evidence.EvidenceSearch.rank` at the shipped settings with each floor:
  nDCG@10, hit@10, and how many claims are left with no sentence at all;
* **gain**: 260 questions that nothing in a biomedical corpus bears on, written here: random letter
  strings, salads of everyday words, and everyday questions off the corpus's topic (cooking, sport,
  travel, music, chores; none about health): the share answered with no sentence;
* **short queries** (a check, not a criterion): 30 two- or three-word biomedical topics written here, as
  a reader types them: the share still answered (short queries sit further from sentences than claims).

The floor shipped is the highest of the grid that costs train nDCG@10 less than 0.002 (the rule paper
search's floor was chosen by). In process, on a copy of an instance that imported and indexed SciFact:

    HF_HUB_OFFLINE=1 .venv/bin/python -m bench.evidence_floor --data-dir D
"""

from __future__ import annotations

import argparse
import random
import shutil
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from bench.evidence_quality import (
    LIMIT,
    _split,
    load_corpus,
    load_judgments,
    per_claim,
    sentence_map,
)
from paperfeed.adapters.embed.cpu import cpu_info

FLOORS = (-1.0, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5)
COST = 0.002  # nDCG@10 the floor may cost on train

_WORDS = (
    "kitchen window garden bicycle umbrella sofa guitar pillow ticket river mountain beach holiday "
    "weekend football stadium pizza pasta recipe oven flour lemon mug teapot "
    "carpet curtain ladder hammer nail paint brush wallpaper garage tractor farmer village castle "
    "museum painting poem novel chapter library shelf pencil eraser notebook backpack jacket scarf "
    "boots sandals sunglasses camera photo album wedding birthday cake candle balloon party dance "
    "song concert drummer violin piano trumpet choir theatre ticket queue airport suitcase passport "
    "hotel lunch dinner picnic basket blanket tent campfire lake boat sail anchor harbour "
    "lighthouse train platform tram taxi bus driver traffic roundabout bridge tunnel motorway "
    "parking postcard stamp envelope letter neighbour puppy kitten parrot goldfish hamster lawn "
    "hedge tulip daisy"
)
EVERYDAY = tuple(_WORDS.split())  # everyday words, none about health or science

OFF_TOPIC = (
    "what time does the last train to Lyon leave",
    "best pizza restaurant near the old harbour",
    "how do I tie a bowline knot",
    "who won the football world cup in 1998",
    "lyrics of yellow submarine",
    "how to remove red wine from a carpet",
    "cheapest flights from Madrid to Oslo in March",
    "how many strings does a cello have",
    "recipe for sourdough bread with a crispy crust",
    "is it going to rain in Dublin tomorrow",
    "how to change a flat tyre on a bicycle",
    "which chess opening is best for beginners",
    "rules of cricket explained simply",
    "how long to boil an egg for a runny yolk",
    "where to buy second hand furniture in Berlin",
    "how do I paint a ceiling without streaks",
    "what is the capital of Australia",
    "how to fold a fitted sheet",
    "good names for a grey kitten",
    "how to learn to juggle three balls",
    "opening hours of the Louvre on Sundays",
    "how to make a paper airplane that flies far",
    "what does offside mean in football",
    "how to wax a snowboard",
    "how to tune a guitar by ear",
    "why does my sourdough starter smell like nail varnish",
    "how to descale a kettle with vinegar",
    "ideas for a tenth wedding anniversary present",
    "how to stop a door from squeaking",
    "which board games are fun for six players",
    "how to plant tulip bulbs in autumn",
    "best way to pack a suitcase for a week",
    "how to make a campfire in the rain",
    "who painted the ceiling of the Sistine Chapel",
    "how much does a tram ticket cost in Prague",
    "how to sharpen a kitchen knife with a stone",
    "what to see in Lisbon in two days",
    "how to iron a shirt collar",
    "recipe for lemon drizzle cake",
    "how to clean suede boots",
    "when is the next full moon",
    "how to build a bird house from pallets",
    "the plot of Pride and Prejudice in brief",
    "how to get chewing gum out of hair",
    "what is the offside trap in ice hockey",
    "how to hang wallpaper on a sloping wall",
    "which colour of paint suits a north-facing room",
    "how to teach a parrot to talk",
    "where can I park near the stadium on match day",
    "how to write a wedding speech",
    "how to repot an orchid",
    "why do cats knock things off tables",
    "the history of the Eiffel Tower",
    "how to play a C major chord on the piano",
    "how to whistle with two fingers",
    "what is a good time for a 10k run",
    "how to store fresh basil",
    "how to unclog a kitchen sink",
    "tickets for the opera in Vienna",
    "how to skim stones on a lake",
)


SHORT = (
    "insulin resistance",
    "tumour suppressor genes",
    "malaria vaccine",
    "gut microbiome",
    "statin side effects",
    "BRCA1 mutations",
    "T cell exhaustion",
    "antibiotic resistance",
    "stem cell niche",
    "vitamin D deficiency",
    "HIV latency",
    "amyloid beta",
    "macrophage polarization",
    "DNA methylation",
    "obesity and diabetes",
    "influenza transmission",
    "microRNA regulation",
    "breast cancer screening",
    "autophagy",
    "telomere length",
    "hepatitis C treatment",
    "neural stem cells",
    "blood pressure lowering",
    "tuberculosis diagnosis",
    "p53 signalling",
    "mitochondrial dysfunction",
    "smoking and lung cancer",
    "CRISPR gene editing",
    "sepsis mortality",
    "regulatory T cells",
)


def nonsense(seed: int = 20261202) -> list[str]:
    """Questions nothing in SciFact bears on: 100 letter strings, 100 word salads, 60 off-topic ones."""
    rng = random.Random(seed)
    letters = "abcdefghijklmnopqrstuvwxyz"
    strings = [
        " ".join(
            "".join(rng.choice(letters) for _ in range(rng.randint(4, 9))) for _ in range(rng.randint(2, 4))
        )
        for _ in range(100)
    ]
    salads = [" ".join(rng.sample(EVERYDAY, rng.randint(3, 6))) for _ in range(100)]
    return [*strings, *salads, *OFF_TOPIC]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data-dir", type=Path, required=True, help="an instance that imported SciFact")
    args = parser.parse_args()
    from paperfeed.bootstrap import build_app
    from paperfeed.bootstrap.search import evidence_settings
    from paperfeed.domain.query import parse_query
    from paperfeed.settings_model import SettingsModel

    print(f"CPU: {cpu_info()}; {time.strftime('%Y-%m-%d %H:%M')}", flush=True)
    print(f"load: {Path('/proc/loadavg').read_text().split()[:3]}", flush=True)
    claims, rel = load_judgments("train")
    mapping = sentence_map(args.data_dir, load_corpus(), {s for r in rel.values() for s in r})
    queries = nonsense()
    with tempfile.TemporaryDirectory(prefix="pf-evidence-floor-") as tmp:
        copy = Path(tmp) / "data"
        shutil.copytree(args.data_dir, copy)
        settings = SettingsModel(data_dir=copy)
        app = build_app(settings)
        try:
            service = app.search.evidence
            shipped = evidence_settings(settings)
            started = time.process_time()
            legs: dict[str, Any] = {}
            for qid, text in claims.items():
                legs[qid] = service.legs(parse_query(text), None, shipped, [])
            off = [service.legs(parse_query(q), None, shipped, []) for q in queries]
            short = [service.legs(parse_query(q), None, shipped, []) for q in SHORT]
            print(
                f"legs of {len(legs)} train claims and {len(off)} nonsense questions in "
                f"{time.process_time() - started:.0f} CPU-s; shipped floor {shipped.min_cosine:g}",
                flush=True,
            )
            cosines = [c for leg in off for c in leg.cosines(leg.keyword + leg.dense).values()]
            best = [max(leg.cosines(leg.keyword + leg.dense).values(), default=-1.0) for leg in off]
            right = [
                max(leg.cosines(leg.keyword + leg.dense).values(), default=-1.0) for leg in legs.values()
            ]
            p95, p5 = np.percentile(best, 95), np.percentile(right, 5)
            print(
                f"best candidate's cosine: nonsense median {np.median(best):.3f} (p95 {p95:.3f}, max "
                f"{max(best):.3f}); train claims median {np.median(right):.3f} (p5 {p5:.3f}, min "
                f"{min(right):.3f}); {len(cosines):,} nonsense candidates"
            )
            tops = [max(leg.cosines(leg.keyword + leg.dense).values(), default=-1.0) for leg in short]
            print(f"short topics: best candidate's cosine median {np.median(tops):.3f}, min {min(tops):.3f}")
            kinds = {"letters": off[:100], "word salad": off[100:200], "off-topic": off[200:]}
            print(
                f"\n{'floor':>6s} {'train nDCG@10':>14s} {'hit@10':>7s} {'claims empty':>13s}   "
                + "  ".join(f"{k + ' empty':>17s}" for k in kinds)
                + f"  {'all nonsense empty':>19s}  {'short answered':>15s}"
            )
            base: float | None = None
            chosen = FLOORS[0]
            for floor in FLOORS:
                w = replace(shipped, min_cosine=floor)
                run, empty = {}, 0
                for qid, leg in legs.items():
                    fused = service.rank(leg, w)[:LIMIT]
                    empty += not fused
                    run[qid] = mapping.ranked([_split(f.key) for f in fused])
                scores = per_claim(run, rel)
                ndcg, hit = float(scores["ndcg@10"].mean()), float(scores["hit@10"].mean())
                base = ndcg if base is None else base
                if base - ndcg < COST:
                    chosen = floor
                shares = {k: sum(not service.rank(leg, w) for leg in v) / len(v) for k, v in kinds.items()}
                every = sum(not service.rank(leg, w) for leg in off) / len(off)
                answered = sum(bool(service.rank(leg, w)) for leg in short) / len(short)
                print(
                    f"{floor:6g} {ndcg:14.4f} {hit:7.3f} {empty:13d}   "
                    + "  ".join(f"{shares[k]:17.1%}" for k in kinds)
                    + f"  {every:19.1%}  {answered:15.1%}",
                    flush=True,
                )
            print(f"\nhighest floor costing train nDCG@10 less than {COST}: {chosen:g}")
        finally:
            app.close()


if __name__ == "__main__":
    main()
