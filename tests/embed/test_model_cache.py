"""The ONNX export is built once per machine, in the cache every data folder shares (PAPERFEED_MODEL_CACHE).

Real exports of the packaged model: the session's ``onnx_fp32`` export is copied where a test needs an fp32
entry, so only quantising (seconds) is rebuilt here, never the minute-long torch export twice.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from paperfeed.adapters.embed.base import resolve_model
from paperfeed.adapters.embed.onnx import OnnxEmbedder, ensure_onnx
from paperfeed.bootstrap import build_app
from paperfeed.settings import Settings, default_model_cache

LOGGER = "paperfeed.adapters.embed.onnx"


def _with_fp32(onnx_fp32: OnnxEmbedder, cache: Path) -> Path:
    """``cache`` holding a copy of the session's fp32 export (as if exported here before)."""
    fp32 = onnx_fp32.files.folder
    target = cache / fp32.parent.name / fp32.name
    shutil.copytree(fp32, target)
    return target


def _builds(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == LOGGER and r.getMessage().startswith(("export", "quantis"))
    ]


def test_the_default_cache_is_the_users_cache_folder(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert default_model_cache() == tmp_path / "paperfeed" / "models"
    monkeypatch.setenv("PAPERFEED_MODEL_CACHE", str(tmp_path / "elsewhere"))
    assert Settings().model_cache == tmp_path / "elsewhere"


def test_a_second_data_folder_reuses_the_machines_export(
    onnx_fp32: OnnxEmbedder, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    cache = tmp_path / "cache"
    _with_fp32(onnx_fp32, cache)
    caplog.set_level(logging.INFO, logger=LOGGER)
    vectors = []
    for name in ("one", "two"):
        settings = Settings(data_dir=tmp_path / name, model_cache=cache, embedding_backend="onnx-int8")
        app = build_app(settings)
        try:
            vectors.append(app.indexes.embedders.current().embed(["graph neural networks for molecules"]))
            files = app.indexes.embedders.current().files  # type: ignore[attr-defined]
        finally:
            app.close()
        if name == "one":
            assert len(_builds(caplog)) == 1  # the int8 variant was quantised, once, into the cache
            first = os.stat(files.model)
            caplog.clear()
    assert _builds(caplog) == []  # the second data folder built nothing
    again = os.stat(files.model)
    assert (again.st_ino, again.st_mtime_ns) == (first.st_ino, first.st_mtime_ns)
    assert files.folder.parent.parent == cache
    assert not (tmp_path / "one" / "models").exists() or not any((tmp_path / "one" / "models").glob("*-*"))
    assert not any((tmp_path / "two" / "models").glob("all-MiniLM*"))
    assert (vectors[0] == vectors[1]).all()
    meta = orjson.loads((files.folder / "meta.json").read_bytes())
    assert set(meta["libraries"]) == {"torch", "transformers", "onnx", "onnxruntime"}
    assert meta["bytes"]["model.onnx"] == files.model.stat().st_size


def test_a_query_process_takes_the_compact_model_with_the_same_vectors_in_less_memory(
    onnx_fp32: OnnxEmbedder, tmp_path: Path, shared_dir: Path
) -> None:
    """A web process embeds queries with the float32 model whose word-embedding table (half the weights)
    is int8 with a scale per token: its own entry beside fp32, built from it without torch, the same
    model id and vectors within cosine 0.9999 of float32 on real titles and abstracts (issue #39 item 6)."""
    import numpy as np

    cache = tmp_path / "cache"
    fp32_folder = _with_fp32(onnx_fp32, cache)
    source = resolve_model(None)
    compact = OnnxEmbedder(source, cache, compact=True)
    plain = OnnxEmbedder(source, cache)
    assert compact.model_id == plain.model_id == onnx_fp32.model_id
    assert compact.files.folder.parent == fp32_folder.parent
    assert compact.files.folder.name.startswith("fp32v8-")
    assert plain.files.folder == fp32_folder  # the float32 entry is untouched
    meta = orjson.loads((compact.files.folder / "meta.json").read_bytes())
    assert meta["compact_vocabulary"] is True
    # 30,522 tokens x 384 dimensions: 4 bytes a value become 1 (+ 4 bytes of scale a token)
    saved = plain.files.model.stat().st_size - compact.files.model.stat().st_size
    assert saved > 30_000_000, saved
    lines = (shared_dir / "seeds" / "seed_papers.jsonl").read_bytes().splitlines()
    rows = [orjson.loads(line) for line in lines[:60]]
    texts = [r["title"] for r in rows[:40]] + [f"{r['title']}. {r.get('abstract') or ''}" for r in rows[40:]]
    cosines = np.sum(compact.embed(texts) * plain.embed(texts), axis=1)
    assert cosines.min() > 0.9999, cosines.min()
    assert cosines.min() < 1.0  # it is another model: not the same file under a new name


def test_a_model_whose_graph_cannot_be_made_compact_embeds_queries_in_float32(
    onnx_fp32: OnnxEmbedder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Another model's graph may not have one word-embedding lookup to make compact: the web still
    embeds its queries (with the float32 model, saying so), it does not lose meaning search."""
    from paperfeed.adapters.embed import onnx
    from paperfeed.domain.errors import EmbedderUnavailable

    def refuse(fp32: object, tmp: Path) -> None:
        raise EmbedderUnavailable("model.onnx: no single word-embedding lookup to make compact")

    monkeypatch.setattr(onnx, "_compact_vocabulary", refuse)
    cache = tmp_path / "cache"
    fp32_folder = _with_fp32(onnx_fp32, cache)
    caplog.set_level(logging.WARNING, logger=LOGGER)
    embedder = OnnxEmbedder(resolve_model(None), cache, compact=True)
    vectors = embedder.embed(["graph neural networks"])
    assert vectors.shape == (1, onnx_fp32.dimension)
    assert embedder.files.folder == fp32_folder
    assert any("embedding queries with the float32 model" in r.getMessage() for r in caplog.records)
    assert not [p.name for p in fp32_folder.parent.iterdir() if p.name.startswith(("fp32v8", ".tmp"))]


def test_a_truncated_entry_is_rebuilt_with_a_warning(
    onnx_fp32: OnnxEmbedder, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    cache = tmp_path / "cache"
    _with_fp32(onnx_fp32, cache)
    built = ensure_onnx(resolve_model(None), cache, quantized=True)
    size = built.model.stat().st_size
    with built.model.open("r+b") as f:  # a disk that filled up, a copy cut short
        f.truncate(size // 2)
    caplog.set_level(logging.INFO, logger=LOGGER)
    rebuilt = ensure_onnx(resolve_model(None), cache, quantized=True)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert str(built.folder) in warnings[0]
    assert "is damaged" in warnings[0]
    assert f"{size:,} were written" in warnings[0]
    assert "rebuilding" in warnings[0]
    assert rebuilt.model.stat().st_size == size
    assert OnnxEmbedder(resolve_model(None), cache, quantized=True).embed(["x"]).shape == (1, 384)


def test_an_entry_onnx_runtime_cannot_load_is_rebuilt(
    onnx_fp32: OnnxEmbedder, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    cache = tmp_path / "cache"
    _with_fp32(onnx_fp32, cache)
    built = ensure_onnx(resolve_model(None), cache, quantized=True)
    size = built.model.stat().st_size
    built.model.write_bytes(b"\0" * size)  # same size, garbage: only loading it tells
    caplog.set_level(logging.INFO, logger=LOGGER)
    embedder = OnnxEmbedder(resolve_model(None), cache, quantized=True)
    assert embedder.embed(["x"]).shape == (1, 384)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "ONNX Runtime cannot load it" in warnings[0]
    assert "rebuilding" in warnings[0]
    assert len(_builds(caplog)) == 1


def test_a_data_folders_own_older_export_is_still_used(onnx_fp32: OnnxEmbedder, tmp_path: Path) -> None:
    """Data folders from before the shared cache keep their export (and so exactly their vectors)."""
    data = tmp_path / "data"
    fp32 = onnx_fp32.files.folder
    legacy = data / "models" / fp32.parent.name / "fp32"  # the old, unversioned layout
    shutil.copytree(fp32, legacy)
    meta = orjson.loads((legacy / "meta.json").read_bytes())
    for key in ("libraries", "bytes"):  # older versions did not write these
        meta.pop(key, None)
    (legacy / "meta.json").write_bytes(orjson.dumps(meta))
    cache = tmp_path / "cache"
    app = build_app(Settings(data_dir=data, model_cache=cache, embedding_backend="onnx"))
    try:
        assert app.indexes.embedders.current().embed(["x"]).shape == (1, 384)
        assert app.indexes.embedders.current().files.folder == legacy  # type: ignore[attr-defined]
    finally:
        app.close()
    assert not cache.exists()


def test_two_processes_building_at_once_leave_one_complete_entry(
    onnx_fp32: OnnxEmbedder, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    _with_fp32(onnx_fp32, cache)
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from paperfeed.adapters.embed.base import resolve_model\n"
        "from paperfeed.adapters.embed.onnx import OnnxEmbedder\n"
        "e = OnnxEmbedder(resolve_model(None), Path(sys.argv[1]), quantized=True, threads=1)\n"
        "print(e.files.folder, e.embed(['x']).shape)\n"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", code, str(cache)], stdout=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    outputs = [p.communicate(timeout=300)[0].strip() for p in procs]
    assert [p.returncode for p in procs] == [0, 0]
    assert outputs[0] == outputs[1]
    assert outputs[0].endswith("(1, 384)")
    entries = sorted(p.name for p in (cache / onnx_fp32.files.folder.parent.name).iterdir())
    assert len(entries) == 2  # fp32-… and int8-…, no temporary or stale folder left
    assert all(not name.startswith(".") for name in entries)
