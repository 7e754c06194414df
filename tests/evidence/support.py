"""A small corpus for evidence search, and the real composition around it (fake embedder, roles by place).

Every abstract is three sentences (background, method, result by place, :class:`PositionalRoles`), so
which sentence must come first is known by construction:

* ``ANSWER`` is about the question as a whole (layer normalization and small batches): its result
  sentence answers "does layer normalization help small batches?";
* ``LONE`` is about weather radar and has one sentence with the words "small batches" in it: a lone
  phrase match, which the paper prior must keep below ``ANSWER``'s sentences;
* ``HOPPER`` is by Grace Hopper, in cs.CL, from 2021 (filters); ``HIDDEN`` is hidden by an administrator
  in the tests that need it; ``MUTED`` carries the word the mute tests mute ("quokka"); ``OTHER``'s first
  sentence carries markup that must reach every surface as text.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from paperfeed.bootstrap import App, build_app
from paperfeed.domain.ingest import Batch
from paperfeed.domain.models import Paper
from paperfeed.settings import Settings
from tests.facets.support import PositionalRoles

ANSWER, LONE, HOPPER, HIDDEN, MUTED, OTHER = (
    "2501.00011",
    "2501.00012",
    "2501.00013",
    "2501.00014",
    "2501.00015",
    "2501.00016",
)
QUESTION = "does layer normalization help small batches?"
ANSWER_RESULT = "Layer normalization helps small batches train stably and beats batch normalization."

ROWS = [
    (
        ANSWER,
        "Layer normalization for training with small batches",
        "Normalization layers stabilise the training of deep networks. We compare layer normalization "
        "with batch normalization for small batches of images. " + ANSWER_RESULT,
        ("Ada Lovelace",),
        ("cs.LG",),
        datetime(2025, 1, 10, tzinfo=UTC),
    ),
    (
        LONE,
        "Weather radar echoes over Europe",
        "Weather radar networks cover most of Europe. Radar echoes arrive in small batches every minute. "
        "Rain and hail are detected an hour earlier.",
        ("Ada Lovelace",),
        ("physics.ao-ph",),
        datetime(2025, 1, 11, tzinfo=UTC),
    ),
    (
        HOPPER,
        "Compilers for language models",
        "Compilers translate programs into machine code. We compile transformer language models with "
        "layer normalization fused into each kernel. Fused kernels run twice as fast on small batches.",
        ("Grace Hopper",),
        ("cs.CL",),
        datetime(2021, 6, 1, tzinfo=UTC),
    ),
    (
        HIDDEN,
        "Hidden notes on layer normalization",
        "Layer normalization is popular. We measure layer normalization with small batches. "
        "Layer normalization helps small batches a great deal.",
        ("Ada Lovelace",),
        ("cs.LG",),
        datetime(2025, 1, 12, tzinfo=UTC),
    ),
    (
        MUTED,
        "Quokka populations and small batches of layer normalization",
        "Quokka populations are studied on islands. We count quokka families with layer normalization "
        "of small batches. Layer normalization of small batches helps quokka counts.",
        ("Ada Lovelace",),
        ("q-bio.PE",),
        datetime(2025, 1, 13, tzinfo=UTC),
    ),
    (
        OTHER,
        "Speech recognition for low-resource languages",
        "Speech recognition needs data that small languages <img src=x onerror=alert('evidence-xss')> lack. "
        "We pretrain on untranscribed audio. Word error rates fall for eight languages.",
        ("Ada Lovelace",),
        ("cs.CL",),
        datetime(2025, 1, 14, tzinfo=UTC),
    ),
]
PAPERS = [
    Paper(id=pid, title=title, abstract=abstract, authors=authors, categories=cats, published=when)
    for pid, title, abstract, authors, cats, when in ROWS
]


def evidence_app(tmp_path: Path, url: str | None = None, *, index: bool = True, **settings: object) -> App:
    """The real composition with the fake embedder and the corpus imported, embedded and (``index``)
    its sentences split with roles by place, which hands them to both sentence indexes.

    The meaning floor is off unless asked for: it was chosen for MiniLM's cosines, and the fake
    embedder's (64 hashed buckets) run lower for the same overlap ("speech recognition data" meets its
    sentence at 0.30); tests/evidence/test_surfaces.py tests the shipped floor on its own instance."""
    settings.setdefault("evidence_min_cosine", -1.0)
    app = build_app(
        Settings(
            data_dir=tmp_path / "data",
            database_url=url,
            embedding_backend="fake",
            **settings,  # type: ignore[arg-type]
        )
    )
    app.indexes.__dict__["role_models"] = PositionalRoles()
    result = app.core.store.apply_batch(Batch(papers=PAPERS))
    app.indexes.keyword.on_papers_changed(result)
    app.indexes.keyword.flush()
    app.indexes.indexer.current().run()
    if index:
        app.indexes.sentence_indexer.current().run()
        app.indexes.evidence.flush()
    return app
