"""The vector index folder's manifest, readable without NumPy or faiss.

A search first asks whether there is an index, of which dimension, and whether it was built for the
configured model; answering that from this small JSON file (not by loading the index) keeps a keyword-only
search from importing the vector stack at all.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import orjson

from paperfeed.domain.search import IndexManifest, VectorIndexMismatch, VectorIndexUnavailable

__all__ = ["FORMAT", "MANIFEST_NAME", "StoredManifest", "check_compatible", "read_manifest"]

FORMAT = 1
MANIFEST_NAME = "manifest.json"


@dataclass(frozen=True, slots=True)
class StoredManifest:
    """The manifest file's content: the domain manifest plus where its files are and how big they are."""

    manifest: IndexManifest
    generation: str
    rows: int  # live and dead rows in the files (count is live rows only)
    files: dict[str, int] = field(default_factory=dict)  # file name -> size in bytes

    def to_json(self) -> bytes:
        m = self.manifest
        return orjson.dumps(
            {
                "format": FORMAT,
                "kind": m.kind,
                "model_id": m.model_id,
                "dimension": m.dimension,
                "count": m.count,
                "built_at": m.built_at,
                "extra": m.extra,
                "generation": self.generation,
                "rows": self.rows,
                "files": self.files,
            },
            option=orjson.OPT_INDENT_2,
        )

    @classmethod
    def from_json(cls, data: bytes, where: Path) -> StoredManifest:
        try:
            raw = orjson.loads(data)
            if raw.get("format") != FORMAT:
                raise VectorIndexUnavailable(f"{where}: unknown index format {raw.get('format')!r}")
            manifest = IndexManifest(
                kind=str(raw["kind"]),
                model_id=str(raw["model_id"]),
                dimension=int(raw["dimension"]),
                count=int(raw["count"]),
                built_at=str(raw["built_at"]),
                extra={str(k): str(v) for k, v in dict(raw.get("extra", {})).items()},
            )
            files = {str(k): int(v) for k, v in dict(raw["files"]).items()}
            return cls(manifest, str(raw["generation"]), int(raw["rows"]), files)
        except VectorIndexUnavailable:
            raise
        except (orjson.JSONDecodeError, AttributeError, KeyError, TypeError, ValueError) as exc:
            raise VectorIndexUnavailable(f"{where}: unreadable manifest ({exc})") from exc


def check_compatible(stored: IndexManifest, where: Path, *, model_id: str, dimension: int) -> None:
    """Refuse an index built for another vector space: its scores would be meaningless against ours."""
    if stored.model_id != model_id or stored.dimension != dimension:
        raise VectorIndexMismatch(
            f"{where}: the vector index was built with model {stored.model_id!r} "
            f"(dimension {stored.dimension}) but model {model_id!r} (dimension {dimension}) is configured; "
            "rebuild the vector index (re-embed the papers) before using it"
        )


def read_manifest(folder: Path) -> StoredManifest | None:
    """The manifest of the index in ``folder``, or None when nothing has been saved there yet."""
    path = folder / MANIFEST_NAME
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    return StoredManifest.from_json(data, path)
