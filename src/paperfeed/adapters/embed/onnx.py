"""The fast embedder: the same model exported to ONNX and run by ONNX Runtime, in float32 or int8.

The export runs once per model and machine (``torch.onnx.export`` of the transformer; mean pooling and
normalisation stay in numpy) and is cached in one folder every data folder shares (``PAPERFEED_MODEL_CACHE``,
default ``~/.cache/paperfeed/models``) under ``<model>-<fingerprint>/{fp32,int8}-<libraries>/``: the
fingerprint names the model files, ``<libraries>`` the versions of torch, transformers, onnx and
onnxruntime, so a changed model or library gets a fresh export. Each variant folder is built in a
temporary folder and renamed into place, so a crash mid-build leaves no half file and two processes
building at once both end up using one complete copy; ``meta.json`` records the files' sizes, and an entry
that does not match them (or that ONNX Runtime cannot load) is rebuilt with a warning. Exports made by
older versions under ``<data_dir>/models/<model>-<fingerprint>/{fp32,int8}/`` are still used first, so
an existing data folder keeps the exact vectors it was embedded with. int8 is ONNX Runtime's dynamic
quantisation with per-channel weight scales (per-tensor scales cost far more accuracy on this model).
A process that embeds only queries (a web process) may take ``fp32v8``: the float32 model with its
word-embedding table (half its weights) stored as int8 with one scale per token, rebuilt into float32 rows
as they are looked up; the same vectors (cosine > 0.9999 to float32 on the seed papers' titles and
abstracts) in ~30 MB less memory (issue #39 item 6: an idle web process under 300 MB).

At run time only onnxruntime and tokenizers are needed; torch and transformers are needed for the export.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import shutil
import threading
import uuid
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import metadata
from importlib import util as importlib_util
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import orjson

from paperfeed.adapters.files import fsync
from paperfeed.domain.embedding import MAX_TOKENS
from paperfeed.domain.errors import EmbedderUnavailable
from paperfeed.domain.wording import count

from .base import ModelSource, force_offline, normalise_rows, token_suffix
from .late import late_vectors

__all__ = ["OnnxEmbedder", "OnnxFiles", "ensure_onnx"]

log = logging.getLogger(__name__)

Vectors = npt.NDArray[np.float32]

EXPORT_FORMAT = 1  # bump when the export changes, so caches built by older code are not reused
INFERENCE_BATCH = 32
_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
_LIBRARIES = ("torch", "transformers", "onnx", "onnxruntime")  # the ones whose version shapes the files


def _library_versions() -> dict[str, str]:
    """Installed versions, read from package metadata (importing torch to ask would cost seconds)."""
    versions = {}
    for name in _LIBRARIES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "none"
    return versions


def _libraries_key(versions: dict[str, str]) -> str:
    text = ";".join(f"{k}={v}" for k, v in sorted(versions.items()))
    return hashlib.blake2b(text.encode(), digest_size=4).hexdigest()


@dataclass(frozen=True, slots=True)
class OnnxFiles:
    """A complete exported variant: the graph, the tokenizer and what the embedder must know."""

    folder: Path
    model: Path
    tokenizer: Path
    max_length: int
    dimension: int


def _snapshot_path(source: ModelSource) -> Path:
    if source.path is not None:
        return source.path
    force_offline()
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(source.spec, local_files_only=True))
    except Exception as exc:
        raise EmbedderUnavailable(
            f"model {source.spec!r} is not a local folder and not in the local Hugging Face cache"
        ) from exc


def _fingerprint(folder: Path) -> str:
    """Identifies the model files (names, sizes, config) so a changed model gets a fresh export."""
    digest = hashlib.blake2b(f"export-format={EXPORT_FORMAT};max={MAX_TOKENS}".encode(), digest_size=8)
    for item in sorted(p for p in folder.rglob("*") if p.is_file() and ".git" not in p.parts):
        digest.update(f"{item.relative_to(folder)}:{item.stat().st_size};".encode())
    for name in ("config.json", "modules.json", "sentence_bert_config.json", "1_Pooling/config.json"):
        if (folder / name).is_file():
            digest.update((folder / name).read_bytes())
    return digest.hexdigest()


def _read_json(path: Path) -> Any:
    return orjson.loads(path.read_bytes()) if path.is_file() else None


def _check_architecture(folder: Path) -> tuple[int, int]:
    """(max_length, dimension), refusing models whose pipeline is not transformer + mean pooling."""
    modules = _read_json(folder / "modules.json") or []
    kinds = [str(m.get("type", "")).rsplit(".", 1)[-1] for m in modules]
    unsupported = [k for k in kinds if k not in ("Transformer", "Pooling", "Normalize")]
    if unsupported:
        raise EmbedderUnavailable(
            f"{folder}: the ONNX backend covers transformer + mean pooling (+ normalise) models; "
            f"this one also has {', '.join(unsupported)}: use the torch backend"
        )
    pooling = _read_json(folder / "1_Pooling" / "config.json") or {"pooling_mode_mean_tokens": True}
    if not pooling.get("pooling_mode_mean_tokens") or any(
        v for k, v in pooling.items() if k.startswith("pooling_mode_") and k != "pooling_mode_mean_tokens"
    ):
        raise EmbedderUnavailable(
            f"{folder}: the ONNX backend supports mean pooling only; use the torch backend"
        )
    config = _read_json(folder / "config.json") or {}
    st_config = _read_json(folder / "sentence_bert_config.json") or {}
    max_length = min(
        MAX_TOKENS,
        int(st_config.get("max_seq_length") or MAX_TOKENS),
        int(config.get("max_position_embeddings") or MAX_TOKENS),
    )
    dimension = int(config.get("hidden_size") or pooling.get("word_embedding_dimension") or 0)
    if dimension <= 0:
        raise EmbedderUnavailable(f"{folder}/config.json: no hidden_size")
    return max_length, dimension


def _fsync_tree(folder: Path) -> None:
    for item in folder.iterdir():
        fsync(item)


def _discard(folder: Path) -> None:
    """Move a damaged entry aside (one rename, so a reader never sees it half deleted), then delete it."""
    stale = folder.with_name(f".stale-{folder.name}-{uuid.uuid4().hex[:8]}")
    with contextlib.suppress(FileNotFoundError):
        os.replace(folder, stale)
    shutil.rmtree(stale, ignore_errors=True)


def _publish(tmp: Path, final: Path) -> None:
    """Rename a finished temporary folder into place; if another process won the race, keep theirs."""
    _fsync_tree(tmp)
    if final.exists() and _files(final) is None:  # damaged (our own builds never leave one)
        _discard(final)
    try:
        os.replace(tmp, final)
    except OSError:
        if _files(final) is None:
            raise
        shutil.rmtree(tmp, ignore_errors=True)


def _export_fp32(model_dir: Path, tmp: Path, max_length: int) -> None:
    force_offline()
    try:
        import torch
        from transformers import AutoModel, AutoTokenizer
    except ImportError as exc:
        raise EmbedderUnavailable(
            f"exporting the model to ONNX (done once) needs torch and transformers ({exc.name} is missing)"
        ) from exc
    from .sentence_transformers import quiet_transformers

    quiet_transformers()
    tokenizer = AutoTokenizer.from_pretrained(str(model_dir), local_files_only=True)
    if not getattr(tokenizer, "is_fast", False):
        raise EmbedderUnavailable(f"{model_dir}: the ONNX backend needs a fast (Rust) tokenizer")
    tokenizer.backend_tokenizer.save(str(tmp / "tokenizer.json"))
    model = AutoModel.from_pretrained(str(model_dir), local_files_only=True, attn_implementation="eager")
    model.eval()
    uses_types = "token_type_ids" in tokenizer.model_input_names

    class _Encoder(torch.nn.Module):
        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any = None) -> Any:
            kwargs = {"token_type_ids": token_type_ids} if token_type_ids is not None else {}
            return self.inner(input_ids=input_ids, attention_mask=attention_mask, **kwargs).last_hidden_state

    names = list(_INPUTS if uses_types else _INPUTS[:2])
    sample = tokenizer(["paperfeed export sample", "a second, longer sample sentence"], padding=True)
    args = tuple(torch.tensor(sample[name], dtype=torch.long) for name in names)
    axes = {name: {0: "batch", 1: "tokens"} for name in [*names, "last_hidden_state"]}
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tracer and deprecation chatter: the graph is verified by tests
        torch.onnx.export(
            _Encoder(model),
            args,
            str(tmp / "model.onnx"),
            dynamo=False,
            input_names=names,
            output_names=["last_hidden_state"],
            dynamic_axes=axes,
            opset_version=17,
            do_constant_folding=True,
        )


def _quantize(fp32: OnnxFiles, tmp: Path) -> None:
    try:
        from onnxruntime.quantization import QuantType, quantize_dynamic
    except ImportError as exc:
        raise EmbedderUnavailable("int8 quantisation needs onnxruntime (and onnx)") from exc
    # quantize_dynamic writes a shape-inferred copy *next to its input* (model-inferred.onnx) and deletes
    # it after: two processes quantising from the shared fp32 folder would delete each other's copy.
    # So it reads a private link (or copy) of the input inside this build's own temporary folder.
    source = tmp / "fp32-input.onnx"
    try:
        os.link(fp32.model, source)
    except OSError:
        shutil.copyfile(fp32.model, source)
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)  # quantize_dynamic logs a pre-processing hint at WARNING on the root logger
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            quantize_dynamic(
                str(source), str(tmp / "model.onnx"), weight_type=QuantType.QInt8, per_channel=True
            )
    finally:
        root.setLevel(level)
        for leftover in tmp.glob("fp32-input*"):
            leftover.unlink()
    shutil.copyfile(fp32.tokenizer, tmp / "tokenizer.json")


def _compact_vocabulary(fp32: OnnxFiles, tmp: Path) -> None:
    """``fp32``'s graph with its word-embedding table as int8 rows and a float32 scale per row.

    The table is the graph's only initializer read by one ``Gather`` of ``input_ids``; that Gather now
    reads int8 rows, and a ``Cast`` and a ``Mul`` by the rows' gathered scales rebuild them in float32.
    Each row's scale is its largest magnitude / 127, so a value moves by at most half a step (0.4 % of
    the row's largest). The transformer's own weights stay float32, as does everything after the lookup.
    """
    try:
        import onnx
        from onnx import TensorProto, helper, numpy_helper
    except ImportError as exc:
        raise EmbedderUnavailable("the compact query model needs the onnx package") from exc
    model = onnx.load(str(fp32.model))
    graph = model.graph
    ids = "input_ids"
    if ids not in {i.name for i in graph.input}:
        raise EmbedderUnavailable(f"{fp32.model}: no input_ids input to make a compact lookup of")
    lookups = [n for n in graph.node if n.op_type == "Gather" and n.input[1] == ids]
    tables = {i.name: i for i in graph.initializer}
    lookups = [n for n in lookups if n.input[0] in tables]
    readers = [n for n in graph.node if lookups and lookups[0].input[0] in n.input]
    if len(lookups) != 1 or len(readers) != 1:
        raise EmbedderUnavailable(f"{fp32.model}: no single word-embedding lookup to make compact")
    (lookup,) = lookups
    table = tables[lookup.input[0]]
    weights = numpy_helper.to_array(table).astype(np.float32)
    scale = np.abs(weights).max(axis=1, keepdims=True) / 127.0
    scale[scale == 0] = 1.0
    rows = np.clip(np.round(weights / scale), -127, 127).astype(np.int8)
    graph.initializer.remove(table)
    graph.initializer.extend(
        [
            numpy_helper.from_array(rows, f"{table.name}.int8"),
            numpy_helper.from_array(scale.astype(np.float32), f"{table.name}.scale"),
        ]
    )
    out = lookup.output[0]
    lookup.input[0], lookup.output[0] = f"{table.name}.int8", f"{out}.int8"
    at = list(graph.node).index(lookup) + 1
    rebuild = [
        helper.make_node("Cast", [f"{out}.int8"], [f"{out}.rows"], to=TensorProto.FLOAT),
        helper.make_node("Gather", [f"{table.name}.scale", ids], [f"{out}.scale"]),
        helper.make_node("Mul", [f"{out}.rows", f"{out}.scale"], [out]),
    ]
    for offset, node in enumerate(rebuild):
        graph.node.insert(at + offset, node)
    onnx.checker.check_model(model)
    onnx.save(model, str(tmp / "model.onnx"))
    shutil.copyfile(fp32.tokenizer, tmp / "tokenizer.json")


def _damage(folder: Path) -> str | None:
    """Why the entry at ``folder`` cannot be used (None: it is complete)."""
    try:
        meta = _read_json(folder / "meta.json")
    except (OSError, orjson.JSONDecodeError):
        return "meta.json is unreadable"
    if not isinstance(meta, dict) or meta.get("format") != EXPORT_FORMAT:
        return "meta.json is missing or from another export format"
    sizes = meta.get("bytes") or {}  # exports before the shared cache did not record sizes
    for name in ("model.onnx", "tokenizer.json"):
        path = folder / name
        if not path.is_file():
            return f"{name} is missing"
        if name in sizes and path.stat().st_size != sizes[name]:
            return f"{name} is {count(path.stat().st_size, 'byte')}, {sizes[name]:,} were written"
    return None


def _files(folder: Path) -> OnnxFiles | None:
    if _damage(folder) is not None:
        return None
    meta = _read_json(folder / "meta.json")
    return OnnxFiles(
        folder,
        folder / "model.onnx",
        folder / "tokenizer.json",
        int(meta["max_length"]),
        int(meta["dimension"]),
    )


def _can_export() -> bool:
    return all(importlib_util.find_spec(name) is not None for name in ("torch", "transformers"))


def ensure_onnx(
    source: ModelSource,
    cache_dir: Path,
    *,
    quantized: bool,
    compact: bool = False,
    legacy_dirs: Sequence[Path] = (),
) -> OnnxFiles:
    """The exported (and, if asked, quantised) model for ``source``, building it once if needed.

    ``cache_dir`` is the shared cache; ``legacy_dirs`` are folders where older versions exported per data
    folder (their complete entries are used first, so that data folder's vectors stay exactly as made).
    ``compact`` (float32 only): the variant with an int8 word-embedding table (:func:`_compact_vocabulary`).
    """
    model_dir = _snapshot_path(source)
    max_length, dimension = _check_architecture(model_dir)
    entry = f"{source.name}-{_fingerprint(model_dir)}"
    compact = compact and not quantized
    kind = "int8" if quantized else "fp32v8" if compact else "fp32"
    for old in (*legacy_dirs, cache_dir) if not compact else ():  # unversioned, as older versions wrote
        found = _files(old / entry / kind)
        if found is not None:
            return found
    versions = _library_versions()
    base = cache_dir / entry
    variant = base / f"{kind}-{_libraries_key(versions)}"
    found = _files(variant)
    if found is not None:
        return found
    if variant.exists():
        log.warning("the cached ONNX model in %s is damaged (%s): rebuilding it", variant, _damage(variant))
        _discard(variant)
    elif not quantized and not _can_export():
        # torch is gone since the export (it is needed only to export): any complete entry will do
        for other in sorted(base.glob(f"{kind}-*")) if base.is_dir() else ():
            if (usable := _files(other)) is not None:
                return usable
    derived = quantized or compact
    fp32 = ensure_onnx(source, cache_dir, quantized=False, legacy_dirs=legacy_dirs) if derived else None
    base.mkdir(parents=True, exist_ok=True)
    tmp = base / f".tmp-{variant.name}-{uuid.uuid4().hex[:8]}"
    tmp.mkdir()
    try:
        if fp32 is None:
            log.info("exporting %s to ONNX into %s (once per machine; about a minute)", source.name, base)
            _export_fp32(model_dir, tmp, max_length)
        elif compact:
            log.info("making %s's compact query model in %s (once per machine)", source.name, base)
            _compact_vocabulary(fp32, tmp)
        else:
            log.info("quantising %s to int8 into %s (once per machine)", source.name, base)
            _quantize(fp32, tmp)
        meta = {
            "format": EXPORT_FORMAT,
            "model": source.name,
            "source": str(model_dir),
            "max_length": max_length,
            "dimension": dimension,
            "pooling": "mean",
            "quantized": quantized,
            "compact_vocabulary": compact,
            "libraries": versions,
            "bytes": {name: (tmp / name).stat().st_size for name in ("model.onnx", "tokenizer.json")},
        }
        (tmp / "meta.json").write_bytes(orjson.dumps(meta, option=orjson.OPT_INDENT_2))
        _publish(tmp, variant)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    built = _files(variant)
    if built is None:
        raise EmbedderUnavailable(f"{variant}: the ONNX export did not produce a usable model")
    return built


class OnnxEmbedder:
    """:class:`~paperfeed.domain.search.Embedder` on ONNX Runtime (CPU).

    float32 ONNX gives the torch model's vectors to ~1e-6 (cosine > 0.9999), so it shares the torch
    backend's ``model_id``; int8 vectors differ measurably and get their own (``+onnx-int8``), so the two
    never share an index.
    """

    def __init__(
        self,
        model: ModelSource,
        cache_dir: Path,
        *,
        quantized: bool = False,
        threads: int | None = None,
        max_tokens: int | None = None,
        spinning: bool = True,
        legacy_dirs: Sequence[Path] = (),
        compact: bool = False,
    ) -> None:
        """``compact``: float32 with the int8 word-embedding table (:func:`_compact_vocabulary`), for a
        process that embeds queries only; the same vectors, so the same ``model_id``."""
        self._source = model
        self._compact = compact and not quantized
        self._cache_dir = cache_dir
        self._legacy_dirs = tuple(legacy_dirs)
        self._quantized = quantized
        self._threads = threads
        self._max_tokens = max_tokens
        self._spinning = spinning
        self._lock = threading.Lock()
        self._session: Any = None
        self._tokenizer: Any = None
        self._files: OnnxFiles | None = None
        self._input_names: list[str] = []

    @property
    def model_id(self) -> str:
        return self._source.name + ("+onnx-int8" if self._quantized else "") + token_suffix(self._max_tokens)

    @property
    def dimension(self) -> int:
        self._load()
        assert self._files is not None
        return self._files.dimension

    @property
    def session(self) -> Any:
        """The ONNX Runtime session (loading it): its options say how many threads it runs."""
        self._load()
        return self._session

    @property
    def files(self) -> OnnxFiles:
        self._load()
        assert self._files is not None
        return self._files

    def _load(self) -> None:
        with self._lock:
            if self._session is not None:
                return
            try:
                import onnxruntime as ort
                from tokenizers import Tokenizer
            except ImportError as exc:
                raise EmbedderUnavailable(
                    f"the onnx embedding backends need onnxruntime and tokenizers ({exc.name} is missing)"
                ) from exc
            files, session = self._open_session(ort)
            tokenizer = Tokenizer.from_file(str(files.tokenizer))
            tokenizer.enable_truncation(
                max_length=min(files.max_length, self._max_tokens or files.max_length)
            )
            tokenizer.no_padding()
            self._input_names = [i.name for i in session.get_inputs()]
            self._tokenizer, self._files, self._session = tokenizer, files, session

    def _open_session(self, ort: Any) -> tuple[OnnxFiles, Any]:
        """The cached files and their session; a cache entry ONNX Runtime cannot load is rebuilt once."""
        files = self._ensure_files()
        try:
            return files, self._session_for(ort, files)
        except EmbedderUnavailable as exc:
            log.warning("%s: rebuilding it", exc)
        _discard(files.folder)
        files = self._ensure_files()
        return files, self._session_for(ort, files)

    def _ensure_files(self) -> OnnxFiles:
        """:func:`ensure_onnx` for this embedder; the float32 model where the compact one cannot be made
        (another model's graph without one word-embedding lookup): queries then cost memory, not search."""
        if self._compact:
            try:
                return ensure_onnx(
                    self._source,
                    self._cache_dir,
                    quantized=False,
                    compact=True,
                    legacy_dirs=self._legacy_dirs,
                )
            except EmbedderUnavailable as exc:
                log.warning("%s: embedding queries with the float32 model", exc)
                self._compact = False
        return ensure_onnx(
            self._source, self._cache_dir, quantized=self._quantized, legacy_dirs=self._legacy_dirs
        )

    def _session_for(self, ort: Any, files: OnnxFiles) -> Any:
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.intra_op_num_threads = self._threads or 0
        options.inter_op_num_threads = 1
        # "0": idle workers sleep instead of busy-waiting for the next run (the CPU is shared)
        spin = "1" if self._spinning else "0"
        options.add_session_config_entry("session.intra_op.allow_spinning", spin)
        options.log_severity_level = 3
        try:
            return ort.InferenceSession(str(files.model), options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # a corrupt cache file: say where it is
            raise EmbedderUnavailable(f"{files.model}: ONNX Runtime cannot load it ({exc})") from exc

    def embed(self, texts: Sequence[str]) -> Vectors:
        self._load()
        assert self._files is not None
        out = np.zeros((len(texts), self._files.dimension), dtype=np.float32)
        if not texts:
            return out
        encodings = self._tokenizer.encode_batch(list(texts))
        lengths = np.array([len(e.ids) for e in encodings])
        order = np.argsort(-lengths, kind="stable")  # similar lengths together: little padding
        for start in range(0, len(order), INFERENCE_BATCH):
            rows = order[start : start + INFERENCE_BATCH]
            width = int(lengths[rows].max())
            feed = {name: np.zeros((len(rows), width), dtype=np.int64) for name in _INPUTS}
            for i, row in enumerate(rows):
                enc = encodings[row]
                n = len(enc.ids)
                feed["input_ids"][i, :n] = enc.ids
                feed["attention_mask"][i, :n] = enc.attention_mask
                feed["token_type_ids"][i, :n] = enc.type_ids
            hidden = self._session.run(None, {k: feed[k] for k in self._input_names})[0]
            mask = feed["attention_mask"][..., None].astype(np.float32)
            pooled = (hidden * mask).sum(axis=1) / np.maximum(mask.sum(axis=1), 1e-9)
            out[rows] = pooled
        return normalise_rows(out)

    def embed_spans(
        self, texts: Sequence[str], spans: Sequence[Sequence[tuple[int, int]]], heads: Sequence[int]
    ) -> tuple[Vectors, list[Vectors]]:
        """Each text's vector (as :meth:`embed`) and its spans' vectors from the same forward pass
        (late chunking: ``late.py``)."""
        self._load()
        assert self._files is not None
        names = self._input_names

        def forward(feed: dict[str, npt.NDArray[np.int64]]) -> Any:
            return self._session.run(None, {k: feed[k] for k in names})[0]

        return late_vectors(
            self._tokenizer,
            forward,
            texts,
            spans,
            heads,
            input_names=names,
            batch=INFERENCE_BATCH,
            dimension=self._files.dimension,
        )
