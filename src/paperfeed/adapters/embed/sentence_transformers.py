"""The reference embedder: sentence-transformers on PyTorch (CPU), optionally with bfloat16 autocast.

The model loads lazily on the first :meth:`~SentenceTransformerEmbedder.embed` (a few seconds), never from
the network: offline mode is forced before transformers is imported.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from paperfeed.domain.embedding import MAX_TOKENS
from paperfeed.domain.errors import EmbedderUnavailable

from .base import ModelSource, force_offline, normalise_rows, token_suffix
from .late import late_vectors

__all__ = ["SentenceTransformerEmbedder", "cpu_supports_bf16"]

Vectors = npt.NDArray[np.float32]

INFERENCE_BATCH = 32  # texts per forward pass: larger batches pad more and gain nothing on a CPU


def cpu_supports_bf16() -> bool:
    """True when the CPU computes bfloat16 natively (AVX512-BF16 or AMX); emulated bf16 is slower."""
    try:
        flags = Path("/proc/cpuinfo").read_text(errors="replace")
    except OSError:
        return False
    return " avx512_bf16" in flags or " amx_bf16" in flags


def quiet_transformers() -> None:
    """Silence weight-loading progress bars and info logs: the CLI draws its own progress."""
    with contextlib.suppress(Exception):
        import transformers

        transformers.logging.set_verbosity_error()  # type: ignore[no-untyped-call]
        transformers.logging.disable_progress_bar()  # type: ignore[no-untyped-call]


class SentenceTransformerEmbedder:
    """:class:`~paperfeed.domain.search.Embedder` running a sentence-transformers model with PyTorch."""

    def __init__(
        self,
        model: ModelSource,
        *,
        threads: int | None = None,
        bf16: bool = False,
        max_tokens: int | None = None,
        spinning: bool = True,
    ) -> None:
        if bf16 and not cpu_supports_bf16():
            raise EmbedderUnavailable(
                "PAPERFEED_TORCH_BF16 is set but this CPU has no native bfloat16 (AVX512-BF16/AMX): "
                "it would run slower than float32; unset it or use the onnx-int8 backend"
            )
        self._source = model
        self._threads = threads
        self._bf16 = bf16
        self._max_tokens = max_tokens
        self._spinning = spinning
        self._model: Any = None
        self._tokenizer: Any = None  # the model's fast tokenizer, for late chunking (embed_spans)
        self._lock = threading.Lock()

    @property
    def model_id(self) -> str:
        return self._source.name + ("+bf16" if self._bf16 else "") + token_suffix(self._max_tokens)

    @property
    def dimension(self) -> int:
        model = self._load()
        getter = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        return int(getter())

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                self._model = self._build()
            return self._model

    def _build(self) -> Any:
        force_offline()
        if not self._spinning and "torch" not in sys.modules:  # OpenMP reads it once, when torch loads
            os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        try:
            import torch
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise EmbedderUnavailable(
                f"the torch embedding backend needs torch and sentence-transformers ({exc.name} is missing)"
            ) from exc
        quiet_transformers()
        if self._threads:
            torch.set_num_threads(self._threads)  # process-wide: one embedding process, one setting
            with contextlib.suppress(RuntimeError):  # only settable before torch's first parallel work
                torch.set_num_interop_threads(1)
        try:
            model = SentenceTransformer(self._source.location, device="cpu", local_files_only=True)
        except (OSError, ValueError) as exc:
            raise EmbedderUnavailable(
                f"cannot load embedding model {self._source.spec!r} offline: {exc}".splitlines()[0]
            ) from exc
        model.eval()
        model.max_seq_length = min(self._max_tokens or MAX_TOKENS, model.max_seq_length or MAX_TOKENS)
        return model

    def embed(self, texts: Sequence[str]) -> Vectors:
        model = self._load()
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        import torch

        autocast = torch.autocast("cpu", dtype=torch.bfloat16) if self._bf16 else contextlib.nullcontext()
        with torch.inference_mode(), autocast:
            out = model.encode(
                list(texts),
                batch_size=INFERENCE_BATCH,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        return normalise_rows(np.asarray(out, dtype=np.float32))  # bf16 rounding: re-normalise in float32

    def _late_tokenizer(self, model: Any) -> Any:
        """The model's own Rust tokenizer, truncating at its window and not padding (``late.py``)."""
        with self._lock:
            if self._tokenizer is None:
                from tokenizers import Tokenizer

                backend = getattr(model.tokenizer, "backend_tokenizer", None)
                if backend is None:
                    raise EmbedderUnavailable(
                        f"{self._source.spec}: sentence vectors need a fast (Rust) tokenizer"
                    )
                tokenizer = Tokenizer.from_str(backend.to_str())
                tokenizer.enable_truncation(max_length=int(model.max_seq_length))
                tokenizer.no_padding()
                self._tokenizer = tokenizer
            return self._tokenizer

    def embed_spans(
        self, texts: Sequence[str], spans: Sequence[Sequence[tuple[int, int]]], heads: Sequence[int]
    ) -> tuple[Vectors, list[Vectors]]:
        """Each text's vector (as :meth:`embed`) and its spans' vectors from the same forward pass
        (late chunking: ``late.py``), the transformer's hidden states pooled in NumPy as ONNX's are."""
        model = self._load()
        tokenizer = self._late_tokenizer(model)
        import torch

        transformer = model[0].auto_model
        names = [
            n
            for n in ("input_ids", "attention_mask", "token_type_ids")
            if n in model.tokenizer.model_input_names
        ]

        def forward(feed: dict[str, npt.NDArray[np.int64]]) -> Any:
            autocast = torch.autocast("cpu", dtype=torch.bfloat16) if self._bf16 else contextlib.nullcontext()
            with torch.inference_mode(), autocast:
                out = transformer(**{k: torch.from_numpy(v) for k, v in feed.items()}, return_dict=True)
            return out.last_hidden_state.float().numpy()

        return late_vectors(
            tokenizer,
            forward,
            texts,
            spans,
            heads,
            input_names=names,
            batch=INFERENCE_BATCH,
            dimension=self.dimension,
        )
