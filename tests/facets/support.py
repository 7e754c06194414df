"""A small corpus where topic and method and result point to different papers, and a role model by place.

Every abstract is three sentences: background, method, result. ``PositionalRoles`` gives them those roles
by their place (a test double of the trained classifier, whose quality bench/sentence_roles.py measures),
so which paper a facet must rank first is known by construction:

* overall and background: ``TOPIC`` (the same problem, protein folding, with another method);
* method: ``METHOD`` (the same graph network on another problem, traffic);
* result: ``RESULT`` (the same finding, on images).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import numpy.typing as npt

from paperfeed.bootstrap import App, build_app
from paperfeed.domain.ingest import Batch
from paperfeed.domain.models import Paper
from paperfeed.domain.sentences import ROLES
from paperfeed.settings import Settings

ME, TOPIC, METHOD, RESULT, NO_RESULT = "2501.00001", "2501.00002", "2501.00003", "2501.00004", "2501.00005"

ROWS = [
    (
        ME,
        "Protein folding with graph networks",
        "Protein folding prediction from amino acid sequences remains a hard open problem for structural "
        "biology and drug design. We use graph neural networks. Accuracy improves by twelve percent.",
    ),
    (
        TOPIC,
        "Protein folding with language models",
        "Protein folding prediction from amino acid sequences remains a hard open problem for structural "
        "biology and drug design. We apply recurrent language models. Predicted structures match crystals.",
    ),
    (
        METHOD,
        "Traffic forecasting on road graphs",
        "Forecasting traffic in large cities helps planners route buses. "
        "We use graph neural networks. Forecasts stay stable during holidays.",
    ),
    (
        RESULT,
        "Image classification with wider convolutions",
        "Image classification on photographs needs robust features. "
        "We widen the convolution layers of a standard residual architecture. "
        "Accuracy improves by twelve percent.",
    ),
    (
        NO_RESULT,
        "A survey of weather radar",
        "Weather radar networks cover most of Europe. Radar echoes reveal rain and hail.",
    ),
    (
        "2501.00006",
        "Speech recognition for low-resource languages",
        "Speech recognition needs data that small languages lack. "
        "We pretrain on untranscribed audio. Word error rates fall for eight languages.",
    ),
]
PAPERS = [
    Paper(
        id=pid,
        title=title,
        abstract=abstract,
        authors=("Ada Lovelace",),
        categories=("cs.LG",),
        published=datetime(2025, 1, n + 1, tzinfo=UTC),
    )
    for n, (pid, title, abstract) in enumerate(ROWS)
]
# the weather survey has two sentences: background, method by place, and no result


class PositionalModel:
    """Role by place: first background, second method, third and later result."""

    model_id = "roles-positional"

    def __init__(self, embedding_model: str) -> None:
        self.embedding_model = embedding_model

    def probabilities(
        self, vectors: npt.NDArray[np.float32], texts: Sequence[str]
    ) -> npt.NDArray[np.float32]:
        out = np.full((len(texts), len(ROLES)), 0.02, dtype=np.float32)
        for i in range(len(texts)):
            out[i, ROLES.index(("background", "method", "result")[min(i, 2)])] = 0.92
        return out


class PositionalRoles:
    """:class:`~paperfeed.domain.sentences.RoleModels` handing out :class:`PositionalModel`."""

    def __init__(self) -> None:
        self.trained = 0

    def current(self, embedder_model: str) -> PositionalModel | None:
        return PositionalModel(embedder_model) if self.trained else None

    def train(self, embed: object) -> PositionalModel:
        self.trained += 1
        return PositionalModel(embed.model_id)  # type: ignore[attr-defined]


def facet_app(tmp_path: Path, url: str | None = None, *, sentences: bool = True, **settings: object) -> App:
    """The real composition with the fake embedder, the corpus imported and embedded, and (with
    ``sentences``) the sentence indexer run with positional roles."""
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
    if sentences:
        app.indexes.sentence_indexer.current().run()
    return app
