"""The sentence-role classifier on CSAbstruct: trained on train, chosen on dev, reported on test (#33).

CSAbstruct (allenai/sequential_sentence_classification, Apache-2.0) labels every sentence of 2,189
computer-science abstracts background, objective, method, result or other. The shipped classifier
(``adapters/sentences/roles.py``) is a logistic regression on the MiniLM sentence vectors in their
context and the sentence's hashed words and word pairs, classes weighted by their rarity; this bench
measures that recipe against vector-only ones and picks the regularisation on the dev split only, then
prints the test split's accuracy, macro-F1 and per-role F1 for the choice, with a
bootstrap interval over test abstracts (sentences of one abstract are not independent).

Sentence vectors come from the bench vector cache (``bench/vector_cache.py``, corpus
``csabstruct_sentences``): about 14k sentences, a few minutes on two cores the first time.

    .venv/bin/python -m bench.sentence_roles
"""

from __future__ import annotations

import argparse
import gzip
import os
import platform
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import orjson

from bench.vector_cache import SHARED, Doc, VectorCache
from paperfeed.adapters.sentences import roles as shipped
from paperfeed.adapters.sentences.roles import LinearRoleModel, read_training, role_features
from paperfeed.domain.sentences import ROLES

Array = npt.NDArray[Any]
Abstracts = list[tuple[Array, list[str]]]  # each abstract's sentence vectors and labels

CSABSTRUCT = SHARED / "data" / "csabstruct.jsonl.gz"


def cpu_flags() -> str:
    """The CPU's AVX flags (what the speed of the embedding depends on)."""
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as fh:
            words = fh.read().split()
    except OSError:
        return platform.processor() or "unknown"
    return " ".join(sorted({w for w in words if w.startswith("avx")})) or "no avx flags"


def read_splits() -> dict[str, list[tuple[list[str], list[str]]]]:
    """CSAbstruct's abstracts by split, sentences whitespace-normalised as the shipped training set."""
    out: dict[str, list[tuple[list[str], list[str]]]] = {"train": [], "dev": [], "test": []}
    with gzip.open(CSABSTRUCT, "rb") as fh:
        for line in fh:
            if line.strip():
                rec = orjson.loads(line)
                sentences = [" ".join(s.split()) for s in rec["sentences"]]
                out[rec["split"]].append((sentences, list(rec["labels"])))
    return out


def abstract_spans(sentences: Sequence[str]) -> tuple[str, list[tuple[int, int]]]:
    """The gold sentences joined by spaces, as an abstract, and each sentence's span in it."""
    spans, at = [], 0
    for sentence in sentences:
        spans.append((at, at + len(sentence)))
        at += len(sentence) + 1
    return " ".join(sentences), spans


def embed_splits_late(
    cache: VectorCache, splits: dict[str, list[tuple[list[str], list[str]]]]
) -> dict[str, Abstracts]:
    """The sentence vectors as the indexer makes them (late chunking, ``SENTENCE_VECTORS``): each
    abstract's gold sentences pooled from one forward pass over the abstract (no title: CSAbstruct has
    none), as the shipped role model is trained (``RoleModelFolder.train``)."""
    papers = []
    for name, rows in splits.items():
        for i, (sentences, _) in enumerate(rows):
            text, spans = abstract_spans(sentences)
            papers.append((Doc(f"{name}{i}", "", text), spans))
    pooled = cache.sentence_vectors("csabstruct", papers, report=print)
    out: dict[str, Abstracts] = {}
    at = 0
    for name, rows in splits.items():
        out[name] = [(pooled[at + i], labels) for i, (_, labels) in enumerate(rows)]
        at += len(rows)
    return out


def embed_splits(
    cache: VectorCache, splits: dict[str, list[tuple[list[str], list[str]]]]
) -> dict[str, Abstracts]:
    """Each sentence embedded on its own (how sentence vectors were made before late chunking)."""
    docs = [
        Doc(f"{name}{i}:{j}", s, "")
        for name, rows in splits.items()
        for i, (ss, _) in enumerate(rows)
        for j, s in enumerate(ss)
    ]
    vectors = cache.vectors("csabstruct_sentences", docs, report=print)
    out: dict[str, Abstracts] = {}
    at = 0
    for name, rows in splits.items():
        out[name] = []
        for sentences, labels in rows:
            out[name].append((vectors[at : at + len(sentences)], labels))
            at += len(sentences)
    return out


# Vector-only recipes compared with the shipped one (role_features + words, LinearRoleModel.fit), classes
# unweighted: each maps one abstract's vectors to rows.
def own_only(v: Array) -> Array:
    return np.asarray(v, dtype=np.float32)


def own_and_place(v: Array) -> Array:
    full = role_features(v)
    d = v.shape[1]
    return np.hstack([full[:, :d], full[:, 4 * d :]])


RECIPES: dict[str, Callable[[Array], Array]] = {
    "own vector": own_only,
    "own + place": own_and_place,
    "own + neighbours + abstract mean + place": role_features,
}


def fit(rows: Abstracts, recipe: Callable[[Array], Array], c: float) -> Any:
    from sklearn.linear_model import LogisticRegression

    x = np.vstack([recipe(v) for v, _ in rows])
    y = np.array([ROLES.index(label) for _, labels in rows for label in labels])
    return LogisticRegression(C=c, max_iter=3000).fit(x, y)


def predict(model: Any, rows: Abstracts, recipe: Callable[[Array], Array]) -> list[Array]:
    return [np.asarray(model.predict(recipe(v))) for v, _ in rows]


def scores(gold: Sequence[Array], pred: Sequence[Array]) -> tuple[float, float, dict[str, float]]:
    """Accuracy, macro-F1 over the roles present in gold, F1 per role."""
    g = np.concatenate(gold)
    p = np.concatenate(pred)
    per: dict[str, float] = {}
    for k, role in enumerate(ROLES):
        tp = float(np.sum((g == k) & (p == k)))
        support = float(np.sum(g == k))
        if support == 0:
            continue
        predicted = float(np.sum(p == k))
        precision = tp / predicted if predicted else 0.0
        recall = tp / support
        per[role] = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return float(np.mean(g == p)), float(np.mean(list(per.values()))), per


def labels_of(rows: Abstracts) -> list[Array]:
    return [np.array([ROLES.index(label) for label in labels]) for _, labels in rows]


def bootstrap(gold: list[Array], pred: list[Array], n: int = 1000, seed: int = 7) -> tuple[float, float]:
    """95% interval of macro-F1, resampling abstracts."""
    rng = np.random.default_rng(seed)
    found = []
    for _ in range(n):
        pick = rng.integers(0, len(gold), len(gold))
        found.append(scores([gold[i] for i in pick], [pred[i] for i in pick])[1])
    low, high = np.percentile(found, [2.5, 97.5])
    return float(low), float(high)


def splitting(splits: dict[str, list[tuple[list[str], list[str]]]]) -> None:
    """Sentence boundaries found by the shipped splitter on the gold sentences joined by spaces."""
    from paperfeed.adapters.sentences.splitter import SentencexSplitter

    splitter = SentencexSplitter()
    abstracts = [sentences for rows in splits.values() for sentences, _ in rows]
    tp = found_n = gold_n = exact = 0
    started = time.process_time()
    for sentences in abstracts:
        text = " ".join(sentences)
        gold, at = set(), 0
        for sentence in sentences[:-1]:
            at += len(sentence)
            gold.add(at)
            at += 1
        found = {end for _, end in splitter.split(text)[:-1]}
        tp += len(gold & found)
        found_n += len(found)
        gold_n += len(gold)
        exact += gold == found
    seconds = time.process_time() - started
    precision, recall = tp / max(found_n, 1), tp / max(gold_n, 1)
    print(
        f"\n## splitting ({len(abstracts):,} CSAbstruct abstracts, gold sentences joined by spaces)\n"
        f"sentencex boundaries: precision {precision:.3f}, recall {recall:.3f}, "
        f"F1 {2 * precision * recall / (precision + recall):.3f}; {exact / len(abstracts):.0%} of abstracts "
        f"split exactly; {len(abstracts) / seconds:,.0f} abstracts per CPU second"
    )


def float16_error(data: dict[str, Abstracts]) -> None:
    """How far the stored float16 sentence vectors are from the float32 ones (cosine)."""
    v = np.vstack([x for rows in data.values() for x, _ in rows]).astype(np.float32)
    h = v.astype(np.float16).astype(np.float32)
    cos = np.sum(v * h, axis=1) / (np.linalg.norm(v, axis=1) * np.linalg.norm(h, axis=1))
    print(
        f"float16 storage of {len(v):,} sentence vectors: cosine to float32 min {cos.min():.6f}, "
        f"mean {cos.mean():.6f} (error below {1 - cos.min():.1e})"
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--c", type=float, nargs="*", default=[0.3, 1.0, 3.0], help="C grid")
    parser.add_argument(
        "--vectors",
        nargs="*",
        choices=["late", "separate"],
        default=["late"],
        help="how sentence vectors are made: late (pooled from the abstract's forward pass, shipped) or "
        "separate (each sentence embedded on its own, as before #39); both: compared in one run",
    )
    parser.add_argument("--backend", default=None, help="embedding backend (default: torch, the reference)")
    args = parser.parse_args(argv)
    print(f"CPU: {platform.machine()}, {os.cpu_count()} cores, {cpu_flags()}")
    splits = read_splits()
    shipped_train = read_training()
    same = shipped_train == splits["train"]
    print(
        "CSAbstruct: "
        + ", ".join(
            f"{k} {len(v):,} abstracts / {sum(len(s) for s, _ in v):,} sentences" for k, v in splits.items()
        )
        + f"; the shipped training set is the train split: {same}"
    )
    if not same:
        raise SystemExit(
            "the shipped training set differs from the train split: fix data/csabstruct_train.jsonl.gz"
        )
    splitting(splits)
    cache = VectorCache.default(args.backend)
    for method in args.vectors:
        print(f"\n# sentence vectors: {method} ({cache.embedder.model_id})")
        data = (embed_splits_late if method == "late" else embed_splits)(cache, splits)
        evaluate(data, splits, args.c)


def evaluate(
    data: dict[str, Abstracts], splits: dict[str, list[tuple[list[str], list[str]]]], grid: Sequence[float]
) -> None:
    """The recipes chosen on dev, reported on test; the shipped classifier's figures."""
    float16_error(data)
    gold_dev, gold_test = labels_of(data["dev"]), labels_of(data["test"])

    print(
        f"\n## choice on dev (macro-F1; C = inverse regularisation)\n{'features':<48}"
        + "".join(f"{f'C={c:g}':>9}" for c in grid)
    )
    began = time.monotonic()
    dev: dict[str, dict[float, float]] = {}
    test: dict[str, dict[float, list[Array]]] = {}  # predicted now, looked at only for the dev choice
    for name, recipe in RECIPES.items():
        dev[name], test[name] = {}, {}
        for c in grid:
            model = fit(data["train"], recipe, c)
            dev[name][c] = scores(gold_dev, predict(model, data["dev"], recipe))[1]
            test[name][c] = predict(model, data["test"], recipe)
        print(f"{name:<48}" + "".join(f"{dev[name][c]:>9.4f}" for c in grid), flush=True)
    texts = {split: [sentences for sentences, _ in rows] for split, rows in splits.items()}
    recipe_shipped = f"shipped: the above + words, balanced ({shipped.FEATURES})"
    dev[recipe_shipped], test[recipe_shipped] = {}, {}
    fitted: dict[float, tuple[LinearRoleModel, float]] = {}
    for c in grid:
        cpu = time.process_time()
        model = LinearRoleModel.fit(data["train"], embedding_model="bench", c=c, texts=texts["train"])
        fitted[c] = (model, time.process_time() - cpu)

        def roles_of(split: str, m: LinearRoleModel = model) -> list[Array]:
            rows = zip(data[split], texts[split], strict=True)
            return [np.asarray(m.probabilities(v, t).argmax(axis=1)) for (v, _), t in rows]

        dev[recipe_shipped][c] = scores(gold_dev, roles_of("dev"))[1]
        test[recipe_shipped][c] = roles_of("test")
    print(f"{recipe_shipped:<48}" + "".join(f"{dev[recipe_shipped][c]:>9.4f}" for c in grid), flush=True)
    f1_dev, name, c = max((f1, n, cc) for n, row in dev.items() for cc, f1 in row.items())
    print(
        f"chosen on dev: {name}, C={c:g} (dev macro-F1 {f1_dev:.4f}); "
        f"shipped: {shipped.FEATURES}, C={shipped._C:g}"
    )

    print("\n## test split (226 abstracts, 1,349 sentences), each recipe at its best dev C")
    print(f"{'features':<48}{'accuracy':>10}{'macro-F1':>10}{'95% CI':>18}")
    for recipe_name in RECIPES:
        dev_best = max(grid, key=lambda cc: dev[recipe_name][cc])
        pred = test[recipe_name][dev_best]
        acc, macro, _ = scores(gold_test, pred)
        low, high = bootstrap(gold_test, pred)
        print(
            f"{f'{recipe_name} (C={dev_best:g})':<48}{acc:>10.4f}{macro:>10.4f}"
            f"{f'[{low:.3f}, {high:.3f}]':>18}",
            flush=True,
        )

    # the shipped model object itself, as an instance trains it (LinearRoleModel.fit on the train split)
    if shipped._C not in fitted:
        raise SystemExit(f"the C grid must hold the shipped C={shipped._C:g}")
    train_cpu = fitted[shipped._C][1]
    pred = test[recipe_shipped][shipped._C]
    acc, macro, per = scores(gold_test, pred)
    low, high = bootstrap(gold_test, pred)
    print(f"\n## the shipped classifier (LinearRoleModel.fit, {shipped.FEATURES}, C={shipped._C:g}) on test")
    print(f"accuracy {acc:.4f}, macro-F1 {macro:.4f} (95% CI {low:.3f}-{high:.3f}; goal >= 0.70)")
    g = np.concatenate(gold_test)
    print(
        "per role: "
        + ", ".join(f"{r} F1 {f:.3f} (n={int(np.sum(g == ROLES.index(r)))})" for r, f in per.items())
    )
    facets = {
        "background+objective": ("background", "objective"),
        "method": ("method",),
        "result": ("result",),
    }
    p = np.concatenate(pred)
    parts = []
    for label, roles in facets.items():
        ks = [ROLES.index(r) for r in roles]
        tp = float(np.sum(np.isin(g, ks) & np.isin(p, ks)))
        prec = tp / max(float(np.sum(np.isin(p, ks))), 1.0)
        rec = tp / max(float(np.sum(np.isin(g, ks))), 1.0)
        parts.append(f"{label} F1 {2 * prec * rec / (prec + rec):.3f}")
    print("per facet (the roles a facet takes its sentences from): " + ", ".join(parts))
    print(f"training the shipped model: {train_cpu:.1f} s CPU (the sentences' embedding not counted)")
    print(f"bench ran {time.monotonic() - began:.0f} s (sentence vectors from the cache)")


if __name__ == "__main__":
    main()
